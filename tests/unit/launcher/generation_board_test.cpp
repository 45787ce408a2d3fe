// GenerationBoard (--restart-policy failed): the keys it writes to a real store server and the
// waits it ends, with threads playing the workers.
#include "ptrun/launcher/agent/generation_board.hpp"

#include <utility>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "ptrun/env/generation_keys.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

using namespace ptrun;
namespace keys = env::generation_keys;
using launcher::GenerationBoard;
using namespace std::chrono_literals;

namespace {

/// What `ended` reported, waited for with a deadline.
struct Outcome {
    std::mutex mutex;
    std::condition_variable changed;
    std::optional<std::pair<int, bool>> got;

    GenerationBoard::Ended callback() {
        return [this](int generation, bool joined) {
            std::lock_guard lock(mutex);
            got = {generation, joined};
            changed.notify_all();
        };
    }
    std::optional<std::pair<int, bool>> wait(std::chrono::milliseconds for_at_most) {
        std::unique_lock lock(mutex);
        changed.wait_for(lock, for_at_most, [this] { return got.has_value(); });
        return got;
    }
};

rdzv::TcpStoreClient client_of(const rdzv::TcpStoreServer& server) {
    rdzv::TcpStoreClientOptions o;
    o.port = server.port();
    return rdzv::TcpStoreClient(o);
}

}  // namespace

TEST_CASE("generation board: the workers joining a generation end its wait",
          "[launcher][recovery]") {
    rdzv::TcpStoreServer server({.host = "127.0.0.1"});
    auto worker = client_of(server);
    GenerationBoard board("127.0.0.1", server.port());
    Outcome outcome;
    CHECK(board.begin({2}, 10s, outcome.callback()) == 1);
    CHECK(worker.get("/ptrun/generation", 1s) == "1");
    CHECK(worker.get(keys::begun(1), 1s) == "2");
    CHECK_FALSE(outcome.wait(50ms));  // nobody joined yet
    worker.compare_set(keys::ready(1), "", "joined");
    CHECK(outcome.wait(5s) == std::pair{1, true});
}

TEST_CASE("generation board: a wait that runs out reports the generation not joined",
          "[launcher][recovery]") {
    rdzv::TcpStoreServer server({.host = "127.0.0.1"});
    GenerationBoard board("127.0.0.1", server.port());
    Outcome outcome;
    CHECK(board.begin({0, 3}, 100ms, outcome.callback()) == 1);
    auto worker = client_of(server);
    CHECK(worker.get(keys::begun(1), 1s) == "0,3");
    CHECK(outcome.wait(5s) == std::pair{1, false});
}

TEST_CASE("generation board: a newer generation supersedes one not ready, and only its wait ends",
          "[launcher][recovery]") {
    rdzv::TcpStoreServer server({.host = "127.0.0.1"});
    auto worker = client_of(server);
    GenerationBoard board("127.0.0.1", server.port());
    Outcome first, second;
    CHECK(board.begin({2}, 10s, first.callback()) == 1);
    // A worker waiting on generation 1 reads the latest generation as soon as it wakes: it must
    // already be 2 then.
    std::string latest_on_waking;
    std::thread waiter([&] {
        auto mine = client_of(server);
        mine.wait({keys::ready(1)}, 10s);
        latest_on_waking = mine.get("/ptrun/generation", 1s);
    });
    CHECK(board.begin({2}, 10s, second.callback()) == 2);
    waiter.join();
    CHECK(latest_on_waking == "2");
    CHECK(worker.get(keys::ready(1), 1s) == "superseded");
    worker.compare_set(keys::ready(2), "", "joined");
    CHECK(second.wait(5s) == std::pair{2, true});
    CHECK_FALSE(first.got);  // superseded: the agent had moved on

    SECTION("a generation already joined stays joined") {
        CHECK(board.begin({1}, 10s, first.callback()) == 3);
        CHECK(worker.get(keys::ready(2), 1s) == "joined");
    }
}

TEST_CASE("generation board: stop() ends the wait without an answer", "[launcher][recovery]") {
    rdzv::TcpStoreServer server({.host = "127.0.0.1"});
    GenerationBoard board("127.0.0.1", server.port());
    Outcome outcome;
    board.begin({1}, 60s, outcome.callback());
    const auto before = std::chrono::steady_clock::now();
    board.stop();
    CHECK(std::chrono::steady_clock::now() - before < 5s);
    CHECK_FALSE(outcome.got);
}

TEST_CASE(
    "generation board: two agents number their generations job-wide, and one superseded by "
    "the other's ends when the newest is joined",
    "[launcher][recovery]") {
    rdzv::TcpStoreServer server({.host = "127.0.0.1"});
    auto worker = client_of(server);
    GenerationBoard node0("127.0.0.1", server.port());
    GenerationBoard node1("127.0.0.1", server.port());
    Outcome first, second;
    CHECK(node0.begin({1}, 10s, first.callback()) == 1);
    CHECK(node1.begin({3}, 10s, second.callback()) == 2);
    CHECK(worker.get("/ptrun/generation", 1s) == "2");
    CHECK(worker.get(keys::ready(1), 1s) == "superseded");
    CHECK(worker.get(keys::begun(1), 1s) == "1");
    CHECK(worker.get(keys::begun(2), 1s) == "3");
    CHECK_FALSE(first.wait(50ms));
    worker.compare_set(keys::ready(2), "", "joined");
    CHECK(first.wait(5s) == std::pair{1, true});  // node 0's recovery ended with generation 2
    CHECK(second.wait(5s) == std::pair{2, true});
}

TEST_CASE(
    "generation board: superseded by another agent's generation that is never joined, the "
    "wait still ends at its own deadline",
    "[launcher][recovery]") {
    rdzv::TcpStoreServer server({.host = "127.0.0.1"});
    GenerationBoard node0("127.0.0.1", server.port());
    GenerationBoard node1("127.0.0.1", server.port());
    Outcome first, second;
    node0.begin({1}, 200ms, first.callback());
    node1.begin({3}, 10s, second.callback());
    CHECK(first.wait(5s) == std::pair{1, false});
    CHECK_FALSE(second.got);
}
