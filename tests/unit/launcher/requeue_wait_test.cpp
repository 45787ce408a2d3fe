#include "ptrun/launcher/agent/requeue_wait.hpp"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace ptrun::launcher;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

/// The coordinator's side as wait_for_other_nodes sees it: members leave when the test says.
class FakeHost final : public RoundHost {
  public:
    explicit FakeHost(std::vector<std::string> running) : running_(std::move(running)) {}
    bool wait_drained(const std::string&, std::chrono::milliseconds) override { return true; }
    std::optional<std::vector<std::string>> wait_members_left(
        const std::string& self, std::chrono::milliseconds timeout) override {
        std::unique_lock lock(mu_);
        self_ = self;
        timeout_ = timeout;
        entered_ = true;
        changed_.notify_all();
        changed_.wait_for(lock, timeout, [&] { return running_.empty(); });
        return running_;
    }
    /// Once node rank 0 waits (at most 10 s): every other node leaves.
    void leave_all_once_waited() {
        {
            std::unique_lock lock(mu_);
            changed_.wait_for(lock, 10s, [&] { return entered_; });
            running_.clear();
        }
        changed_.notify_all();
    }
    std::string self_;
    std::chrono::milliseconds timeout_{-1};

  private:
    std::mutex mu_;
    std::condition_variable changed_;
    std::vector<std::string> running_;
    bool entered_ = false;
};

}  // namespace

TEST_CASE("requeue: the deadline is the others' grace, their shutdown and a margin",
          "[launcher][requeue]") {
    const Clock::time_point t0{};
    CHECK(requeue_deadline(t0, 60s, 30s) == t0 + 60s + 30s + kRequeueWaitMargin);
    CHECK(requeue_deadline(t0, 0s, 0s) == t0 + kRequeueWaitMargin);
}

TEST_CASE("requeue: node rank 0 waits until the other nodes left, then says so",
          "[launcher][requeue]") {
    FakeHost host({"node2"});
    std::thread node2([&] { host.leave_all_once_waited(); });  // its shard written meanwhile
    const auto start = Clock::now();
    const auto r = wait_for_other_nodes(&host, "me", start + 30s);
    node2.join();
    CHECK(Clock::now() - start < 20s);  // the event, not the deadline
    CHECK(r.all_ended);
    CHECK(host.self_ == "me");
    CHECK(host.timeout_ > 29s);
    CHECK_THAT(r.text, Catch::Contains("until every other node's workers had ended"));
}

TEST_CASE("requeue: a node that never leaves is named once the deadline passes",
          "[launcher][requeue]") {
    FakeHost host({"node2", "node3"});
    const auto start = Clock::now();
    const auto r = wait_for_other_nodes(&host, "me", start + 100ms);
    CHECK(Clock::now() - start >= 90ms);
    CHECK_FALSE(r.all_ended);
    CHECK_THAT(r.text, Catch::Contains("node2, node3 has not left the rendezvous"));
    CHECK_THAT(r.text, Catch::Contains("requeueing anyway"));
}

TEST_CASE("requeue: a deadline already past does not wait", "[launcher][requeue]") {
    FakeHost host({"node2"});
    const auto r = wait_for_other_nodes(&host, "me", Clock::now() - 1s);
    CHECK(host.timeout_ == 0ms);
    CHECK_FALSE(r.all_ended);
}

TEST_CASE("requeue: without the coordinator node rank 0 waits out the deadline and says why",
          "[launcher][requeue]") {
    const auto start = Clock::now();
    auto r = wait_for_other_nodes(nullptr, "me", start + 100ms);
    CHECK(Clock::now() - start >= 100ms);
    CHECK_FALSE(r.all_ended);
    CHECK_THAT(r.text, Catch::Contains("does not coordinate the rendezvous"));
    // A role another node holds answers nullopt: the same.
    struct Elsewhere final : RoundHost {
        bool wait_drained(const std::string&, std::chrono::milliseconds) override { return true; }
    } elsewhere;
    r = wait_for_other_nodes(&elsewhere, "me", Clock::now() + 10ms);
    CHECK_THAT(r.text, Catch::Contains("does not coordinate the rendezvous"));
}
