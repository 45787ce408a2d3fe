#include "generation_watch.hpp"

#include <vector>

#include "ptrun/env/generation_keys.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::ddp::detail {

GenerationWatch::GenerationWatch(const std::string& host, int port, std::int64_t generation,
                                 std::chrono::milliseconds connect_timeout)
    : client_(std::make_unique<rdzv::TcpStoreClient>(rdzv::TcpStoreClientOptions{
          .host = host,
          .port = static_cast<std::uint16_t>(port),
          .dialect = rdzv::Dialect::Modern,
          .connect_timeout = connect_timeout,
          .io_timeout = connect_timeout,
      })),
      next_(generation + 1) {
    thread_ = std::thread([this] {
        const std::vector<std::string> keys{env::generation_keys::begun(next_)};
        for (;;) {
            try {
                client_->wait(keys, std::chrono::hours(1));
                begun_.store(true, std::memory_order_release);
                return;
            } catch (const rdzv::StoreTimeout&) {
            } catch (const rdzv::StoreError&) {
                // Interrupted, or the store is gone: the collectives' own timeout bounds them.
                return;
            }
        }
    });
}

GenerationWatch::~GenerationWatch() {
    client_->interrupt();
    if (thread_.joinable()) thread_.join();
}

}  // namespace ptrun::ddp::detail
