#include "ptrun/launcher/membership/placement_exit.hpp"

#include <spdlog/spdlog.h>

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"

namespace ptrun::launcher {
namespace {

constexpr std::chrono::milliseconds kCountOutTimeout{5'000};
/// How long the store host whose worker failed keeps the store for the others' root-cause claims.
constexpr std::chrono::milliseconds kFailedWait{2'000};

}  // namespace

void placement_exit_barrier(const LaunchConfig& config, const FixedPlacement& p, int exit_code,
                            const std::shared_ptr<spdlog::logger>& log,
                            std::chrono::milliseconds timeout) {
    if (!config.master_port || p.world_size < 2) return;
    const std::string count_key = "ptrun/exit/" + config.run_id + "/count";
    const std::string all_key = "ptrun/exit/" + config.run_id + "/all";
    rdzv::TcpStoreClientOptions options;
    options.port = *config.master_port;
    try {
        if (!p.hosts_store) {
            options.host = config.master_addr;
            options.connect_timeout = options.io_timeout = kCountOutTimeout;
            rdzv::TcpStoreClient client(options);
            if (client.add(count_key, 1) == p.world_size - 1) client.set(all_key, "1");
            return;
        }
        options.host = "127.0.0.1";  // the store listens on every interface of this host
        options.connect_timeout = kCountOutTimeout;
        rdzv::TcpStoreClient client(options);
        if (exit_code != 0) {
            // A failed job: the others end soon; the store stays until they have counted out (at
            // most a few seconds), so that they can read which rank failed first.
            try {
                client.wait({all_key}, kFailedWait);
            } catch (const rdzv::StoreTimeout&) {
                // a rank that hangs on: its launcher (mpirun, srun) ends it
            }
            return;
        }
        log->info(
            "worker done; keeping the store up until the other {} ranks' workers end (at most {} "
            "s)",
            p.world_size - 1, timeout.count() / 1000);
        client.wait({all_key}, timeout);
    } catch (const rdzv::StoreTimeout&) {
        log->warn("not every rank ended within {} s; closing the store anyway",
                  timeout.count() / 1000);
    } catch (const rdzv::StoreError& e) {
        if (p.hosts_store) log->warn("exit barrier: {}", e.what());
        // a task without the store: the host is gone already, nothing left to tell it
    }
}

}  // namespace ptrun::launcher
