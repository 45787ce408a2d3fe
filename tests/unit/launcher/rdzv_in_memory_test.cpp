// The multi-node rendezvous end to end in one process: a Coordinator and two or three
// RdzvSessions over ONE shared InMemoryStore, with millisecond heartbeats. Each node's
// connections go through a Link the test can cut, as a dead network would.
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/launcher/membership/coordinator.hpp"
#include "ptrun/launcher/membership/rdzv_session.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/in_memory_store.hpp"

using namespace ptrun::launcher;
using namespace std::chrono_literals;
using ptrun::rdzv::InMemoryStore;
using ptrun::rdzv::Store;

namespace {

/// Long enough for a loaded machine under a sanitizer; the tests pass in milliseconds.
constexpr std::chrono::milliseconds kWait{10'000};

/// Values handed over by callbacks on session threads, taken on the test thread.
template <typename T>
class Inbox {
  public:
    void push(T value) {
        {
            std::lock_guard lock(mu_);
            items_.push_back(std::move(value));
        }
        ready_.notify_all();
    }
    /// The oldest value, waiting up to `within` for one.
    std::optional<T> pop(std::chrono::milliseconds within = kWait) {
        std::unique_lock lock(mu_);
        if (!ready_.wait_for(lock, within, [&] { return !items_.empty(); })) return std::nullopt;
        T value = std::move(items_.front());
        items_.pop_front();
        return value;
    }
    std::size_t size() {
        std::lock_guard lock(mu_);
        return items_.size();
    }

  private:
    std::mutex mu_;
    std::condition_variable ready_;
    std::deque<T> items_;
};

class Connection;

/// One party's connections to the shared store. cut() fails their blocked and later calls with
/// ConnectionLost until mend(); after it each connection reconnects on its next call, as a
/// TcpStoreClient does. Must outlive the connections it hands out.
class Link {
  public:
    explicit Link(InMemoryStore& store) : store_(store) {}
    StoreConnector connector();
    void cut();
    void mend() { broken_ = false; }
    /// The connections open through this link now.
    std::size_t open() {
        std::lock_guard lock(mu_);
        return connections_.size();
    }
    /// How many ADDs to `key` went through this link.
    int adds_to(const std::string& key) {
        std::lock_guard lock(mu_);
        auto it = adds_.find(key);
        return it == adds_.end() ? 0 : it->second;
    }

  private:
    friend class Connection;
    InMemoryStore& store_;
    std::atomic<bool> broken_{false};
    std::mutex mu_;
    std::vector<Connection*> connections_;
    std::map<std::string, int> adds_;  ///< ADDs by key, under mu_
};

/// A Store over a fresh handle of the shared store, broken while its Link is cut.
class Connection final : public Store {
  public:
    explicit Connection(Link& link) : link_(link) {
        std::lock_guard lock(link_.mu_);
        link_.connections_.push_back(this);
    }
    ~Connection() override {
        std::lock_guard lock(link_.mu_);
        std::erase(link_.connections_, this);
    }

    /// Drops the handle: a call blocked on it fails. Called by Link::cut under the link's mutex.
    void drop() {
        std::lock_guard lock(mu_);
        if (handle_) handle_->interrupt();
        handle_.reset();
    }

    void set(std::string_view k, std::string_view v) override { live("set")->set(k, v); }
    std::string get(std::string_view k, ptrun::rdzv::Duration t) override {
        return live("get")->get(k, t);
    }
    std::int64_t add(std::string_view k, std::int64_t d) override {
        {
            std::lock_guard lock(link_.mu_);
            link_.adds_[std::string(k)] += 1;
        }
        return live("add")->add(k, d);
    }
    std::string compare_set(std::string_view k, std::string_view e, std::string_view d) override {
        return live("compare_set")->compare_set(k, e, d);
    }
    bool check(const std::vector<std::string>& ks) override { return live("check")->check(ks); }
    void wait(const std::vector<std::string>& ks, ptrun::rdzv::Duration t) override {
        live("wait")->wait(ks, t);
    }
    bool delete_key(std::string_view k) override { return live("delete_key")->delete_key(k); }
    std::int64_t num_keys() override { return live("num_keys")->num_keys(); }
    void append(std::string_view k, std::string_view v) override { live("append")->append(k, v); }
    std::vector<std::string> multi_get(const std::vector<std::string>& ks,
                                       ptrun::rdzv::Duration t) override {
        return live("multi_get")->multi_get(ks, t);
    }
    void multi_set(const std::vector<std::string>& ks,
                   const std::vector<std::string>& vs) override {
        live("multi_set")->multi_set(ks, vs);
    }
    void queue_push(std::string_view k, std::string_view v) override {
        live("queue_push")->queue_push(k, v);
    }
    std::string queue_pop(std::string_view k, ptrun::rdzv::Duration t) override {
        return live("queue_pop")->queue_pop(k, t);
    }
    std::int64_t queue_len(std::string_view k) override { return live("queue_len")->queue_len(k); }
    std::vector<std::string> queue_pop_batch(std::string_view k, std::size_t max,
                                             ptrun::rdzv::Duration t) override {
        return live("queue_pop_batch")->queue_pop_batch(k, max, t);
    }
    std::vector<std::string> list_keys() override { return live("list_keys")->list_keys(); }
    void interrupt() noexcept override {
        std::lock_guard lock(mu_);
        interrupted_ = true;
        if (handle_) handle_->interrupt();
    }
    bool wakeable() const noexcept override { return true; }
    void wake() noexcept override {
        std::lock_guard lock(mu_);
        if (handle_) handle_->wake();
    }

  private:
    /// The handle to call, connecting anew after a cut was mended; throws ConnectionLost while
    /// the link is cut or after interrupt().
    std::shared_ptr<InMemoryStore> live(std::string_view operation) {
        std::lock_guard lock(mu_);
        if (interrupted_)
            throw ptrun::rdzv::ConnectionLost(std::string(operation) + ": interrupted");
        if (link_.broken_) throw ptrun::rdzv::ConnectionLost(std::string(operation) + ": link cut");
        if (!handle_) handle_ = link_.store_.connect();
        return handle_;
    }

    Link& link_;
    std::mutex mu_;
    std::shared_ptr<InMemoryStore> handle_;
    bool interrupted_ = false;
};

StoreConnector Link::connector() {
    return [this](std::chrono::milliseconds) -> std::unique_ptr<Store> {
        return std::make_unique<Connection>(*this);
    };
}

void Link::cut() {
    std::lock_guard lock(mu_);
    broken_ = true;
    for (auto* c : connections_) c->drop();
}

/// Hands each log line's text to an Inbox.
class InboxSink final : public spdlog::sinks::base_sink<std::mutex> {
  public:
    explicit InboxSink(Inbox<std::string>& lines) : lines_(lines) {}

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        lines_.push(std::string(msg.payload.data(), msg.payload.size()));
    }
    void flush_() override {}

  private:
    Inbox<std::string>& lines_;
};

/// The next line of `lines` containing `text`, if one comes within kWait.
bool logged(Inbox<std::string>& lines, const std::string& text) {
    while (auto line = lines.pop()) {
        if (line->find(text) != std::string::npos) return true;
    }
    return false;
}

std::shared_ptr<spdlog::logger> quiet_logger() {
    return std::make_shared<spdlog::logger>("rdzv-in-memory",
                                            std::make_shared<spdlog::sinks::null_sink_mt>());
}

struct Job {
    int min_nodes = 2;
    int max_nodes = 2;
    int max_restarts = 0;
    /// Long: a round of MAX nodes closes at once, and none closes early on a loaded machine.
    std::chrono::milliseconds last_call{kWait};
    /// Silence after which the coordinator declares a node lost; long unless a test wants it.
    std::chrono::milliseconds lost_after{5'000};
    /// How often the agents beat.
    std::chrono::milliseconds heartbeat{10};
};

/// The store host's side: the shared store and the Coordinator on it.
struct Cluster {
    explicit Cluster(Job j) : job(j) {
        CoordinatorOptions co;
        co.store = HostPort{"memory", 0};
        co.keys = keys;
        co.policy.min_nodes = job.min_nodes;
        co.policy.max_nodes = job.max_nodes;
        co.policy.max_restarts = job.max_restarts;
        co.policy.last_call = job.last_call;
        co.policy.lost_after = job.lost_after;
        co.policy.master_addr = "10.0.0.1";
        co.policy.master_port = 29500;
        co.heartbeat = 10ms;
        co.auth = auth;
        co.logger =
            std::make_shared<spdlog::logger>("coordinator", std::make_shared<InboxSink>(log));
        co.connect = link.connector();
        coordinator = std::make_unique<Coordinator>(std::move(co));
    }

    Job job;
    InMemoryStore store;
    RdzvKeys keys = rdzv_keys("in-memory-test");
    RdzvAuth auth{"in-memory-test-secret"};
    Link link{store};
    Inbox<std::string> log;  ///< the coordinator's log lines
    std::unique_ptr<Coordinator> coordinator;
};

/// One agent's side: its session and what its callbacks delivered.
struct Node {
    /// `max_restarts`: the node's --max-restarts, the job's unless given.
    Node(Cluster& cluster, const std::string& name, std::optional<int> max_restarts = {})
        : link(cluster.store) {
        RdzvSessionOptions o;
        o.store = HostPort{"memory", 0};
        o.keys = cluster.keys;
        o.self.id = name + ":1:abcd";
        o.self.hostname = name;
        o.self.addr = "addr-of-" + name;
        o.self.nproc = 2;
        o.self.max_restarts = max_restarts.value_or(cluster.job.max_restarts);
        o.nnodes = NodeRange{cluster.job.min_nodes, cluster.job.max_nodes};
        o.settings.join_timeout = kWait;
        o.settings.read_timeout = 2s;
        o.settings.heartbeat = cluster.job.heartbeat;
        o.settings.keep_alive_max_attempt = 100;
        o.auth = cluster.auth;
        o.logger = quiet_logger();
        o.on_waiting = [this](const JoinProgress& p) { progress.push(p); };
        o.connect = link.connector();
        session = std::make_unique<RdzvSession>(std::move(o));
    }

    void join() {
        session->join([this](NodePlacement p) { placed.push(std::move(p)); },
                      [this](RendezvousError e) { failed.push(e.what()); });
    }
    void watch(const NodePlacement& p) {
        session->watch(
            p, [this](RoundEnd e) { ended.push(std::move(e)); },
            [this](std::string why) { lost.push(std::move(why)); });
    }
    /// Joins, waits for the placement and watches its round.
    NodePlacement join_and_watch() {
        join();
        auto p = placed.pop();
        REQUIRE(p);
        watch(*p);
        return *p;
    }

    Link link;
    Inbox<NodePlacement> placed;
    Inbox<std::string> failed;
    Inbox<RoundEnd> ended;
    Inbox<std::string> lost;
    Inbox<JoinProgress> progress;
    std::unique_ptr<RdzvSession> session;  // last: stopped before what its callbacks use
};

/// Joins every node at once, then collects and watches their placements.
std::vector<NodePlacement> form_round(const std::vector<Node*>& nodes) {
    for (auto* n : nodes) n->join();
    std::vector<NodePlacement> out;
    for (auto* n : nodes) {
        auto p = n->placed.pop();
        REQUIRE(p);
        n->watch(*p);
        out.push_back(*p);
    }
    return out;
}

/// Every placement is of one round of `nodes` nodes with consistent ranks (2 workers each).
void check_consistent(const std::vector<NodePlacement>& ps, int nodes) {
    std::vector<int> groups;
    for (const auto& p : ps) {
        CHECK(p.round == ps[0].round);
        CHECK(p.token == ps[0].token);
        CHECK(p.restart_count == ps[0].restart_count);
        CHECK(p.nodes == nodes);
        CHECK(p.world_size == 2 * nodes);
        CHECK(p.rank_base == 2 * p.group_rank);
        CHECK(p.master_addr == "10.0.0.1");
        CHECK(p.master_port == 29500);
        groups.push_back(p.group_rank);
    }
    std::sort(groups.begin(), groups.end());
    for (int g = 0; g < nodes; ++g) CHECK(groups[static_cast<std::size_t>(g)] == g);
}

/// A job of two nodes, node-a and node-b, whose first round is running and watched.
struct TwoNodes {
    explicit TwoNodes(Job job) : cluster(job), a(cluster, "node-a"), b(cluster, "node-b") {
        placements = form_round({&a, &b});
    }
    Cluster cluster;
    Node a;
    Node b;
    std::vector<NodePlacement> placements;
};

}  // namespace

TEST_CASE("rdzv in memory: two nodes join one round with consistent placements",
          "[launcher][rdzv_in_memory]") {
    TwoNodes job(Job{});
    const auto& ps = job.placements;
    check_consistent(ps, 2);
    CHECK(ps[0].round == 0);
    CHECK(ps[0].group_rank != ps[1].group_rank);
    CHECK(ps[0].token.size() == 16);
}

TEST_CASE("rdzv in memory: a node waiting for the others hears how many joined, then the end",
          "[launcher][rdzv_in_memory]") {
    // The first wait chunk (1 s) ends with one read of the node's spare mark and the
    // coordinator's status: not a spare, one node joined of the two the round needs.
    Cluster cluster(Job{});
    Node first(cluster, "first");
    first.join();
    auto waiting = first.progress.pop();
    REQUIRE(waiting);
    CHECK_FALSE(waiting->done);
    CHECK(waiting->joined == 1);
    Node second(cluster, "second");
    second.join();
    REQUIRE(first.placed.pop());
    REQUIRE(second.placed.pop());
    std::optional<JoinProgress> last;
    while (auto p = first.progress.pop(std::chrono::milliseconds(0))) last = p;
    REQUIRE(last);
    CHECK(last->done);
}

TEST_CASE("rdzv in memory: a node that stops beating is lost and the survivor re-forms",
          "[launcher][rdzv_in_memory]") {
    Cluster cluster(Job{.min_nodes = 1, .max_restarts = 1, .lost_after = 300ms});
    Node a(cluster, "node-a");
    auto b = std::make_unique<Node>(cluster, "node-b");
    auto first = form_round({&a, b.get()});
    check_consistent(first, 2);
    b.reset();  // the node dies: no report, its heartbeats stop

    auto end = a.ended.pop();
    REQUIRE(end);
    CHECK(end->reason == EndReason::NodeLost);
    CHECK(end->host == "node-b");
    CHECK_FALSE(end->final);
    CHECK_THAT(end->message, Catch::Contains("no heartbeat"));

    auto next = a.join_and_watch();
    CHECK(next.round == first[0].round + 1);
    CHECK(next.nodes == 1);
    CHECK(next.restart_count == 1);
    CHECK(next.token != first[0].token);
}

TEST_CASE("rdzv in memory: a third node arriving scales the running round up",
          "[launcher][rdzv_in_memory]") {
    Cluster cluster(Job{.min_nodes = 2, .max_nodes = 3, .last_call = 50ms});
    Node a(cluster, "node-a");
    Node b(cluster, "node-b");
    Node c(cluster, "node-c");
    auto first = form_round({&a, &b});  // closes after the last call, with two
    check_consistent(first, 2);

    c.join();
    for (auto* n : {&a, &b}) {
        auto end = n->ended.pop();
        REQUIRE(end);
        CHECK(end->reason == EndReason::ScaleUp);
        CHECK(end->host == "node-c");
        CHECK_FALSE(end->final);
    }
    // Every agent says how the round ended; the coordinator does not say it again.
    while (auto line = cluster.log.pop(std::chrono::milliseconds(0))) {
        CHECK(line->find("ended") == std::string::npos);
    }
    a.join();
    b.join();
    std::vector<NodePlacement> second;
    for (auto* n : {&a, &b, &c}) {
        auto p = n->placed.pop();
        REQUIRE(p);
        second.push_back(*p);
    }
    check_consistent(second, 3);
    CHECK(second[0].round == first[0].round + 1);
    CHECK(second[0].restart_count == 0);  // scaling up is not a restart
}

TEST_CASE("rdzv in memory: one node's failure report ends the round everywhere",
          "[launcher][rdzv_in_memory]") {
    TwoNodes job(Job{});
    auto& [cluster, a, b, ps] = job;

    RoundEnd failure{.reason = EndReason::Failure,
                     .exit_code = 3,
                     .host = "node-a",
                     .rank = 1,
                     .message = "worker 1 exited with 3"};
    a.session->report_failure(ps[0].round, failure);
    for (auto* n : {&a, &b}) {
        auto end = n->ended.pop();
        REQUIRE(end);
        CHECK(end->reason == EndReason::Failure);
        CHECK(end->final);  // max_restarts 0
        CHECK(end->exit_code == 3);
        CHECK(end->host == "node-a");
        CHECK(end->rank == 1);
        CHECK_THAT(end->message, Catch::Contains("worker 1 exited with 3"));
    }
}

TEST_CASE(
    "rdzv in memory: a session holds one store connection, a report goes at once while "
    "it watches",
    "[launcher][rdzv_in_memory]") {
    // Issue 40: the join, the watch and the beats share one connection (16,384 agents with
    // three each did not fit a store host's descriptors). The beats are a minute apart here:
    // the failure report cuts the watch's wait short instead of waiting behind it.
    TwoNodes job(Job{.lost_after = 600s, .heartbeat = 60s});
    auto& [cluster, a, b, ps] = job;
    CHECK(a.link.open() == 1);
    CHECK(b.link.open() == 1);
    const auto start = std::chrono::steady_clock::now();
    a.session->report_failure(ps[0].round, RoundEnd{.reason = EndReason::Failure,
                                                    .exit_code = 3,
                                                    .host = "node-a",
                                                    .rank = 1,
                                                    .message = "worker 1 exited with 3"});
    for (auto* n : {&a, &b}) {
        auto end = n->ended.pop();
        REQUIRE(end);
        CHECK(end->reason == EndReason::Failure);
    }
    CHECK(std::chrono::steady_clock::now() - start < kWait);
}

TEST_CASE("rdzv in memory: success reported by every node completes the job",
          "[launcher][rdzv_in_memory]") {
    TwoNodes job(Job{});
    auto& [cluster, a, b, ps] = job;

    a.session->report_success(ps[0].round);
    b.session->report_success(ps[0].round);
    for (auto* n : {&a, &b}) {
        auto end = n->ended.pop();
        REQUIRE(end);
        CHECK(end->reason == EndReason::Complete);
        CHECK(end->final);
        CHECK(end->exit_code == 0);
    }
    // The store host (a) waits for the others to leave before it stops the store.
    b.session->report_leaving(ps[0].round, "job complete");
    CHECK(cluster.coordinator->wait_drained("node-a:1:abcd", kWait));
}

TEST_CASE("rdzv in memory: a node beats on its heartbeat's period, not with every event",
          "[launcher][rdzv_in_memory]") {
    // Each ADD is a transaction through etcd: the first join does not add one of its own (it
    // waits for the beat thread's first), and the reports between beats go without one.
    TwoNodes job(Job{.heartbeat = 60s});
    auto& [cluster, a, b, ps] = job;
    a.session->report_success(ps[0].round);
    b.session->report_success(ps[0].round);
    for (auto* n : {&a, &b}) REQUIRE(n->ended.pop());
    b.session->report_leaving(ps[0].round, "job complete");
    REQUIRE(cluster.coordinator->wait_drained("node-a:1:abcd", kWait));
    a.session->stop();
    b.session->stop();
    CHECK(a.link.adds_to(cluster.keys.heartbeat("node-a:1:abcd")) == 1);
    CHECK(b.link.adds_to(cluster.keys.heartbeat("node-b:1:abcd")) == 1);
}

TEST_CASE("rdzv in memory: a node leaving a running round ends it as a lost node",
          "[launcher][rdzv_in_memory]") {
    TwoNodes job(Job{.min_nodes = 1, .max_restarts = 1});
    auto& [cluster, a, b, ps] = job;

    b.session->report_leaving(ps[0].round, "SIGTERM from the scheduler");
    for (auto* n : {&a, &b}) {
        auto end = n->ended.pop();
        REQUIRE(end);
        CHECK(end->reason == EndReason::NodeLost);
        CHECK(end->host == "node-b");
        CHECK_THAT(end->message, Catch::Contains("left: SIGTERM from the scheduler"));
    }
    auto next = a.join_and_watch();  // the survivor re-forms at once, without b
    CHECK(next.nodes == 1);
    CHECK(next.round == ps[0].round + 1);
}

TEST_CASE("rdzv in memory: a refused join fails with the coordinator's message, exit code 2",
          "[launcher][rdzv_in_memory]") {
    Cluster cluster(Job{});
    Node c(cluster, "node-c", 3);
    c.session->join(
        [&](NodePlacement p) { c.placed.push(std::move(p)); },
        [&](RendezvousError e) { c.failed.push(std::to_string(e.exit_code) + " " + e.what()); });
    auto why = c.failed.pop();
    REQUIRE(why);
    CHECK(*why ==
          "2 rendezvous refused this node: --max-restarts 3 on node-c differs from the store "
          "host's 0: expected the same value on every node");
    CHECK(c.placed.size() == 0);
}

TEST_CASE("rdzv in memory: stop returns promptly while a join is blocked",
          "[launcher][rdzv_in_memory]") {
    Cluster cluster(Job{});
    Node a(cluster, "node-a");
    a.join();  // waits for a second node that never comes
    InMemoryStore& store = cluster.store;
    store.wait({cluster.keys.status()}, kWait);  // the coordinator has counted a's join

    const auto start = std::chrono::steady_clock::now();
    a.session->stop();
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(took < 1s);
    CHECK(a.placed.size() == 0);
    CHECK(a.failed.size() == 0);  // stopping is not a rendezvous failure
}

TEST_CASE("rdzv in memory: a store connection that breaks calls lost once",
          "[launcher][rdzv_in_memory]") {
    TwoNodes job(Job{});
    auto& a = job.a;

    a.link.cut();  // the watcher's wait and the heartbeat both fail
    auto why = a.lost.pop();
    REQUIRE(why);
    CHECK_THAT(*why, Catch::Contains("rendezvous store at memory"));
    a.session.reset();  // every session thread has ended: no callback can come later
    CHECK(a.lost.size() == 0);
    CHECK(a.ended.size() == 0);
}

TEST_CASE("rdzv in memory: the coordinator serves again once its store connection is back",
          "[launcher][rdzv_in_memory]") {
    Cluster cluster(Job{});
    Node a(cluster, "node-a");
    Node b(cluster, "node-b");
    a.join();
    cluster.store.wait({cluster.keys.status()}, kWait);  // a's join was counted

    cluster.link.cut();
    REQUIRE(logged(cluster.log, "lost its store connection"));
    b.join();  // queued while the coordinator cannot read the queue
    cluster.link.mend();
    auto pa = a.placed.pop();
    auto pb = b.placed.pop();
    REQUIRE(pa);
    REQUIRE(pb);
    check_consistent({*pa, *pb}, 2);
    CHECK(logged(cluster.log, "reconnected"));
}

TEST_CASE("rdzv in memory: a flood of malformed events is logged once, then counted",
          "[launcher][rdzv_in_memory]") {
    Cluster cluster(Job{});
    // Authentic (sealed with the job's key) but not an event: 2,000 of them.
    const std::string sealed = cluster.auth.seal(cluster.keys.events(), "not an event");
    for (int i = 0; i < 2000; ++i) cluster.store.queue_push(cluster.keys.events(), sealed);
    // The coordinator goes on serving: a round forms behind the flood.
    Node a(cluster, "node-a");
    Node b(cluster, "node-b");
    check_consistent(form_round({&a, &b}), 2);
    std::size_t malformed = 0;
    while (auto line = cluster.log.pop(std::chrono::milliseconds(0))) {
        if (line->find("ignoring a malformed event") != std::string::npos) ++malformed;
    }
    CHECK(malformed >= 1);
    CHECK(malformed <= 2);  // one per 5 s, the flood takes milliseconds
}
