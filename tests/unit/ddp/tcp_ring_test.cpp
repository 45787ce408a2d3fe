#include "tcp_ring.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ptrun/ddp/errors.hpp"
#include "ptrun/rendezvous/in_memory_store.hpp"

using namespace ptrun::ddp;
using namespace ptrun::ddp::detail;

namespace {

// Builds an n-leader ring over loopback, one thread per leader, and runs `body` on each.
// `board(i)` gives leader i its FailureBoard (off by default).
void run_ring(
    int n, const std::function<void(TcpRing&, int)>& body,
    const std::function<FailureBoard(int)>& board = [](int) { return FailureBoard(); }) {
    std::vector<Listener> listeners;
    for (int i = 0; i < n; ++i) listeners.push_back(listen_any());
    std::vector<int> ranks;
    for (int i = 0; i < n; ++i) ranks.push_back(i * 10);
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            try {
                const CallTimer t = CallTimer::start("ring setup", std::chrono::seconds(10));
                const int next = (i + 1) % n;
                Fd to_next =
                    connect_link("127.0.0.1", listeners[static_cast<std::size_t>(next)].port, i, t);
                Fd from_prev =
                    accept_link(listeners[static_cast<std::size_t>(i)], (i + n - 1) % n, t);
                TcpRing ring(i, ranks, std::move(from_prev), std::move(to_next), board(i));
                body(ring, i);
            } catch (...) {
                errors[static_cast<std::size_t>(i)] = std::current_exception();
            }
        });
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors) {
        if (e) std::rethrow_exception(e);
    }
}

}  // namespace

TEST_CASE("ring allreduce over loopback sums for 2, 3 and 4 leaders", "[ddp]") {
    for (int n : {2, 3, 4}) {
        std::atomic<int> bad{0};
        run_ring(n, [&](TcpRing& ring, int me) {
            std::vector<std::int32_t> v(1'000'003);
            for (std::size_t i = 0; i < v.size(); ++i)
                v[i] = static_cast<std::int32_t>(i % 1000) + me;
            ring.allreduce(v.data(), v.size(), DType::Int32, ReduceOp::Sum,
                           CallTimer::start("allreduce", std::chrono::seconds(20)));
            for (std::size_t i = 0; i < v.size(); ++i) {
                bad += v[i] != n * static_cast<std::int32_t>(i % 1000) + n * (n - 1) / 2;
            }
        });
        INFO("leaders=" << n);
        CHECK(bad == 0);
    }
}

TEST_CASE("a leader that shuts its ring down makes its neighbours lose it", "[ddp]") {
    std::atomic<int> lost{0};
    run_ring(3, [&](TcpRing& ring, int me) {
        if (me == 1) {
            ring.abort(-1, "test");
            return;
        }
        std::vector<float> v(100000, 1.0f);
        try {
            ring.allreduce(v.data(), v.size(), DType::Float32, ReduceOp::Sum,
                           CallTimer::start("allreduce", std::chrono::seconds(5)));
        } catch (const PeerLost&) {
            ++lost;
        } catch (const CollectiveTimeout&) {
            ++lost;  // the far side of the ring may only see its own neighbour stall
        }
    });
    CHECK(lost == 2);
}

TEST_CASE("a leader that aborts names the failed rank to its neighbours, not itself", "[ddp]") {
    auto store = std::make_shared<ptrun::rdzv::InMemoryStore>();
    std::vector<int> blamed(3, -1);
    std::vector<std::string> messages(3);
    run_ring(
        3,
        [&](TcpRing& ring, int me) {
            if (me == 1) {  // leader rank 10 saw its local rank 13 die
                ring.abort(13, "allreduce: lost rank 13 (its process exited)");
                return;
            }
            std::vector<float> v(100000, 1.0f);
            try {
                ring.allreduce(v.data(), v.size(), DType::Float32, ReduceOp::Sum,
                               CallTimer::start("allreduce", std::chrono::seconds(5)));
            } catch (const PeerLost& e) {
                blamed[static_cast<std::size_t>(me)] = e.peer;
                messages[static_cast<std::size_t>(me)] = e.what();
                ring.abort(e.peer, e.what());  // as CpuProcessGroup does: pass the blame on
            }
        },
        [&](int) { return FailureBoard(store, "g/failure"); });
    // Leader 2 reads leader 1's note; leader 0 either does too, or reads leader 2's, which
    // passed the same blame on.
    for (int me : {0, 2}) {
        INFO("leader " << me << ": " << messages[static_cast<std::size_t>(me)]);
        CHECK(blamed[static_cast<std::size_t>(me)] == 13);
        CHECK_THAT(messages[static_cast<std::size_t>(me)], Catch::Contains("lost rank 13"));
    }
}
