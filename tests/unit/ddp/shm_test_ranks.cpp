#include "shm_test_ranks.hpp"

#include <unistd.h>

#include <atomic>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace ptrun::ddp::test {

using namespace detail;

namespace {
// Each rank maps the segment itself, as separate processes do, so that an address of one mapping
// kept inside the segment fails here too. Under ThreadSanitizer every rank uses the first mapping
// instead: TSan tracks memory by address, and between two mappings it would see no access at all.
#if defined(__SANITIZE_THREAD__)
constexpr bool kOneMapping = true;
#else
constexpr bool kOneMapping = false;
#endif
}  // namespace

void run_shm_ranks(int n, std::size_t slot_bytes, std::uint32_t copy_mode,
                   const std::function<void(ShmCollectives&, RankBoard&)>& body) {
    static std::atomic<int> counter{0};
    const std::string name =
        "/ptrun-ddp-unit-shm-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    const std::size_t bytes = segment_bytes(n, slot_bytes);
    std::vector<SharedSegment> segs;  // [0] stays here to look at the boards
    segs.push_back(SharedSegment::create(name, bytes));
    auto* h = static_cast<ShmHeader*>(segs.front().data());
    h->magic = kShmMagic;
    h->local_size = static_cast<std::uint32_t>(n);
    h->copy_mode = copy_mode;
    h->slot_bytes = slot_bytes;
    for (int i = 0; i < n; ++i) {
        segs.push_back(kOneMapping ? SharedSegment::view(segs.front())
                                   : SharedSegment::open(name, bytes));
    }
    segs.front().unlink();
    std::vector<int> ranks, pids;
    for (int i = 0; i < n; ++i) {
        ranks.push_back(i);
        pids.push_back(static_cast<int>(::getpid()));
    }
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            const auto me = static_cast<std::size_t>(i);
            try {
                ShmCollectives shm(std::move(segs[me + 1]), i, ranks, pids);
                auto* board = reinterpret_cast<RankBoard*>(static_cast<char*>(segs.front().data()) +
                                                           board_offset(n, i));
                body(shm, *board);
            } catch (...) {
                errors[me] = std::current_exception();
            }
        });
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors) {
        if (e) std::rethrow_exception(e);
    }
}

}  // namespace ptrun::ddp::test
