#include "executor.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "ptrun/ddp/errors.hpp"
#include "work_state.hpp"

using namespace ptrun::ddp;
using namespace ptrun::ddp::detail;

TEST_CASE("operations run one at a time in issue order", "[ddp]") {
    auto ex = Executor::start();
    std::vector<int> order;
    std::vector<WorkPtr> works;
    for (int i = 0; i < 100; ++i) works.push_back(ex->submit([&order, i] { order.push_back(i); }));
    works.back()->wait();
    for (auto& w : works) CHECK(w->completed());
    REQUIRE(order.size() == 100);
    for (int i = 0; i < 100; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
    ex->stop();
}

TEST_CASE("wait rethrows the operation's error, and only for that operation", "[ddp]") {
    auto ex = Executor::start();
    auto bad = ex->submit([] { throw CollectiveError("boom"); });
    auto good = ex->submit([] {});
    CHECK_THROWS_WITH(bad->wait(), "boom");
    CHECK_THROWS_AS(bad->wait(), CollectiveError);  // callable twice
    CHECK_NOTHROW(good->wait());
}

TEST_CASE("stop drains the queue before joining", "[ddp]") {
    auto ex = Executor::start();
    int ran = 0;
    for (int i = 0; i < 10; ++i) ex->submit([&ran] { ++ran; });
    ex->stop();
    CHECK(ran == 10);
}

TEST_CASE("a completed WorkState reports done and rethrows", "[ddp]") {
    auto ok = completed_work();
    CHECK(ok->completed());
    ok->wait();
    auto failed = completed_work(std::make_exception_ptr(std::runtime_error("x")));
    CHECK_THROWS_WITH(failed->wait(), "x");
}

TEST_CASE("CollectiveTimeout and PeerLost name the collective, ranks and time", "[ddp]") {
    CollectiveTimeout t("allreduce", {2, 3}, std::chrono::milliseconds(1500));
    CHECK(std::string(t.what()) == "allreduce timed out after 1500 ms waiting for ranks 2, 3");
    CHECK(t.peers == std::vector<int>{2, 3});
    PeerLost p("broadcast", 1, "its process exited");
    CHECK(std::string(p.what()) == "broadcast: lost rank 1 (its process exited)");
    CHECK(p.peer == 1);
}
