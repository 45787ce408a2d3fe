#include "failure_board.hpp"

#include <catch2/catch.hpp>
#include <thread>

#include "ptrun/rendezvous/in_memory_store.hpp"

using ptrun::ddp::detail::FailureBoard;
using namespace std::chrono_literals;

TEST_CASE("a posted note reads back with its culprit and message", "[ddp]") {
    auto store = std::make_shared<ptrun::rdzv::InMemoryStore>();
    FailureBoard board(store, "g/failure");
    board.post(1, 7, "allreduce: lost rank 7 (its process exited)");
    const auto note = board.read(1, 0ms);
    REQUIRE(note);
    CHECK(note->culprit == 7);
    CHECK(note->what == "allreduce: lost rank 7 (its process exited)");
    CHECK(store->check({"g/failure/1"}));
}

TEST_CASE("no note, a malformed note or an off board read as nothing, in bounded time", "[ddp]") {
    auto store = std::make_shared<ptrun::rdzv::InMemoryStore>();
    FailureBoard board(store, "g/failure");
    CHECK_FALSE(board.read(0, 0ms));
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(board.read(0, 50ms));
    CHECK(std::chrono::steady_clock::now() - start < 5s);
    store->set("g/failure/2", "seven\nwhatever");
    CHECK_FALSE(board.read(2, 0ms));
    store->set("g/failure/3", "7");
    CHECK_FALSE(board.read(3, 0ms));
    FailureBoard off;
    off.post(0, 1, "x");  // no store: nothing happens, nothing throws
    CHECK_FALSE(off.read(0, 10ms));
}

TEST_CASE("a note posted while the reader waits is seen", "[ddp]") {
    auto store = std::make_shared<ptrun::rdzv::InMemoryStore>();
    FailureBoard reader(store, "g/failure"), writer(store, "g/failure");
    std::thread poster([&] { writer.post(4, 9, "late"); });
    const auto note = reader.read(4, 10s);
    poster.join();
    REQUIRE(note);
    CHECK(note->culprit == 9);
}
