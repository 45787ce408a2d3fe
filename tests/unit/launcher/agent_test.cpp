// The agent driven through its seams: a fake WorkerLauncher plays scripted worker exits and a fake
// RoundMember plays the rounds, so failure, restart, lost nodes, scale-up and signals run in
// milliseconds with no process started.

#include "ptrun/launcher/agent/agent.hpp"

#include <fcntl.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ptrun/launcher/agent/decide.hpp"
#include "ptrun/launcher/membership/membership.hpp"
#include "ptrun/launcher/output/console_stream.hpp"
#include "ptrun/launcher/process/worker_launcher.hpp"
#include "temp_dir.hpp"

namespace ptrun::launcher {
namespace {

namespace asio = boost::asio;

/// How worker `local_rank` of the fake's attempt `attempt` (0, 1, ...) ends: at once with the
/// exit given, or, for nullopt, when a signal ends it.
using Script = std::function<std::optional<WorkerExit>(int attempt, int local_rank)>;

std::optional<WorkerExit> runs_until_signalled() { return std::nullopt; }
WorkerExit exits(int code) { return WorkerExit{code, 0}; }

/// What the fake launcher saw; outlives the agent that owns the fake.
struct LaunchLog {
    struct Launch {
        int attempt = 0;
        int local_rank = 0;
        pid_t pid = 0;
        env::EnvMap env;
    };
    std::vector<Launch> launches;
    std::vector<std::pair<pid_t, int>> signals;  ///< (process group, signal)
    int attempts = 0;                            ///< begin_attempt calls
    bool closed = false;
    bool timed_out = false;  ///< the agent did not finish within the fake's deadline

    std::vector<Launch> of_attempt(int attempt) const {
        std::vector<Launch> found;
        for (const auto& l : launches) {
            if (l.attempt == attempt) found.push_back(l);
        }
        return found;
    }
    int signalled(int signo) const {
        int n = 0;
        for (const auto& s : signals) n += s.second == signo ? 1 : 0;
        return n;
    }
};

/// Scripted workers: never a process; pids above any pid_max, so a stray kill reaches nobody.
class FakeLauncher final : public WorkerLauncher {
  public:
    FakeLauncher(Script script, std::shared_ptr<LaunchLog> log,
                 std::function<void(int attempt, int local_rank)> on_launch)
        : script_(std::move(script)), log_(std::move(log)), on_launch_(std::move(on_launch)) {}

    void open(asio::io_context& io, ChangeHandler changed) override {
        io_ = &io;
        changed_ = std::move(changed);
        open_ = true;
        // A bounded run: an agent that never finishes fails its test instead of hanging it.
        deadline_.emplace(io);
        deadline_->expires_after(std::chrono::seconds(10));
        deadline_->async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            log_->timed_out = true;
            io_->stop();
        });
    }
    void close() override {
        open_ = false;
        log_->closed = true;
        if (deadline_) deadline_->cancel();
    }
    void begin_attempt() override {
        ++log_->attempts;
        running_.clear();
        launched_in_attempt_ = 0;
    }
    pid_t launch(SpawnRequest& request) override {
        const int attempt = log_->attempts - 1;
        const int lr = launched_in_attempt_++;
        const pid_t pid = next_pid_++;
        log_->launches.push_back({attempt, lr, pid, request.env});
        running_.insert(pid);
        if (auto exit = script_(attempt, lr)) end_later(pid, *exit);
        if (on_launch_) on_launch_(attempt, lr);
        return pid;
    }
    void signal_group(pid_t pgid, int signo) override {
        log_->signals.emplace_back(pgid, signo);
        const bool ends = signo != SIGCONT && signo != SIGUSR1 && signo != SIGUSR2;
        if (ends && running_.count(pgid)) end_later(pgid, WorkerExit{0, signo});
    }
    void end_attempt() override { running_.clear(); }  // killed: no exit is reported any more
    void note_temp_dir(const std::string&) override {}

  private:
    /// The worker's exit reaches the agent from its loop, as a reaped child's does.
    void end_later(pid_t pid, WorkerExit exit) {
        asio::post(*io_, [this, pid, exit] {
            if (!open_ || running_.erase(pid) == 0) return;  // already ended, or the attempt
            changed_(ChildChange{pid, ChildChange::Kind::Exited, exit, 0});
        });
    }

    Script script_;
    std::shared_ptr<LaunchLog> log_;
    std::function<void(int, int)> on_launch_;
    asio::io_context* io_ = nullptr;
    ChangeHandler changed_;
    std::optional<asio::steady_timer> deadline_;
    bool open_ = false;
    std::set<pid_t> running_;
    int launched_in_attempt_ = 0;
    pid_t next_pid_ = 10'000'000;
};

/// Scripted rounds: each join takes the next placement (none left: the join waits); a round
/// with an entry in `ends` ends as soon as it is watched; a success report completes the job and
/// a failure report ends it with the failure's code.
struct FakeMembership final : RoundMember, RoundHost {
    std::deque<NodePlacement> rounds;
    std::map<int, RoundEnd> ends;
    std::map<int, std::string> lost;  ///< the store is lost as soon as this round is watched
    std::function<void()> on_join_waiting;
    std::vector<std::string> calls;

    void join(std::function<void(NodePlacement)> done,
              std::function<void(RendezvousError)>) override {
        calls.push_back("join");
        if (rounds.empty()) {
            if (on_join_waiting) on_join_waiting();
            return;
        }
        auto next = rounds.front();
        rounds.pop_front();
        done(next);
    }
    void watch(const NodePlacement& placement, std::function<void(RoundEnd)> ended,
               std::function<void(std::string)> on_lost) override {
        calls.push_back("watch " + std::to_string(placement.round));
        ended_ = ended;
        if (auto it = ends.find(placement.round); it != ends.end()) ended(it->second);
        if (auto it = lost.find(placement.round); it != lost.end()) on_lost(it->second);
    }
    /// As the coordinator with no restarts left: the failure ends the job.
    void report_failure(int round, RoundEnd end) override {
        calls.push_back("failure " + std::to_string(round) + ": " + end.message);
        end.final = true;
        if (ended_) ended_(end);
    }
    void report_success(int round) override {
        calls.push_back("success " + std::to_string(round));
        if (ended_) ended_(RoundEnd{.reason = EndReason::Complete, .final = true, .exit_code = 0});
    }
    void report_leaving(int round, std::string why) override {
        calls.push_back("leaving " + std::to_string(round) + ": " + why);
    }
    void report_checkpointed(int round, int exit_code, std::string why) override {
        calls.push_back("checkpointed " + std::to_string(round) + " (" + std::to_string(exit_code) +
                        "): " + why);
    }
    void stop() override { calls.push_back("stop"); }
    bool wait_drained(const std::string&, std::chrono::milliseconds) override {
        calls.push_back("drained");
        return true;
    }

  private:
    std::function<void(RoundEnd)> ended_;
};

NodePlacement round_placement(int round, int group_rank, int nodes, int nproc) {
    NodePlacement p;
    p.round = round;
    p.group_rank = group_rank;
    p.nodes = nodes;
    p.rank_base = group_rank * nproc;
    p.world_size = nodes * nproc;
    p.master_addr = "127.0.0.1";
    p.master_port = 29500;
    p.token = "t" + std::to_string(round);
    return p;
}

LaunchConfig test_config(int nproc, int max_restarts) {
    LaunchConfig c;
    c.nproc_per_node = nproc;
    c.max_restarts = max_restarts;
    c.run_id = "agent-test";
    c.hostname = "testhost";
    c.signals_to_handle = {SIGTERM};
    c.shutdown_timeout = std::chrono::seconds(5);  // fake workers end at once
    return c;
}

struct Outcome {
    int code = -1;
    std::string log;     ///< everything the agent logged
    std::string report;  ///< what it wrote to its stderr console (the failure report)
    std::shared_ptr<LaunchLog> launches;
    std::chrono::milliseconds took{0};
};

/// Runs an agent on `config` with the fake launcher (and `membership` when given) to its end.
Outcome run_agent(const LaunchConfig& config, Script script,
                  std::function<void(int, int)> on_launch = {},
                  FakeMembership* membership = nullptr) {
    test::TempDir dir;
    Outcome outcome;
    outcome.launches = std::make_shared<LaunchLog>();
    std::ostringstream log_text;
    auto logger = std::make_shared<spdlog::logger>(
        "agent-test", std::make_shared<spdlog::sinks::ostream_sink_st>(log_text));
    const std::string report_path = (dir.path / "stderr").string();
    const int report_fd = ::open(report_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(report_fd >= 0);
    {
        auto console = std::make_shared<Console>(report_fd, report_fd);
        std::optional<Membership> m;
        if (membership) m = Membership{membership, membership, "testhost:1:x", {}};
        WorkerCommand command{"/bin/true", {"true"}, "", "", ""};
        LocalPlacement local;
        local.workers.resize(static_cast<std::size_t>(config.nproc_per_node));
        env::EnvMap parent_env{{"TMPDIR", dir.path.string()}};
        const auto start = std::chrono::steady_clock::now();
        Agent agent(config, command, local, parent_env,
                    StoreEndpoint{"127.0.0.1", 29500, false, {}, {}, -1, {}}, logger, m, console,
                    std::make_unique<FakeLauncher>(std::move(script), outcome.launches,
                                                   std::move(on_launch)));
        outcome.code = agent.run();
        outcome.took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start);
    }
    ::close(report_fd);
    logger->flush();
    outcome.log = log_text.str();
    std::ifstream in(report_path);
    outcome.report.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    REQUIRE_FALSE(outcome.launches->timed_out);
    CHECK(outcome.launches->closed);
    return outcome;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("agent: a failed worker without restarts ends the job with its exit code", "[agent]") {
    auto config = test_config(2, 0);
    auto run = run_agent(config, [](int, int lr) {
        return lr == 1 ? std::optional(exits(3)) : runs_until_signalled();
    });
    CHECK(run.code == 3);
    CHECK(run.launches->attempts == 1);
    // The healthy worker is stopped with SIGTERM; the report names the failing rank.
    CHECK(run.launches->signalled(SIGTERM) == 1);
    CHECK(contains(run.report, "Root cause (first failure)"));
    CHECK(contains(run.report, "1 (local rank 1)"));
    CHECK(contains(run.report, "exit code 3"));
    CHECK(run.took < std::chrono::seconds(2));
}

TEST_CASE("agent: a worker failure restarts the group, which then succeeds", "[agent]") {
    auto config = test_config(2, 1);
    auto run = run_agent(config, [](int attempt, int lr) -> std::optional<WorkerExit> {
        if (attempt == 0) return lr == 0 ? std::optional(exits(1)) : runs_until_signalled();
        return exits(0);
    });
    CHECK(run.code == 0);
    REQUIRE(run.launches->attempts == 2);
    // The restart is announced with its cause, and the next attempt knows its restart count.
    const auto first = run.launches->of_attempt(0);
    REQUIRE(first.size() == 2);
    CHECK(contains(run.log, "worker rank 0 (local rank 0, pid " + std::to_string(first[0].pid) +
                                ") failed: exit code 1; restarting the worker group (restart 1 "
                                "of 1)"));
    for (const auto& l : run.launches->of_attempt(1)) {
        CHECK(l.env.at("TORCHELASTIC_RESTART_COUNT") == "1");
    }
    CHECK_FALSE(contains(run.report, "worker group failed"));  // no failure report
}

TEST_CASE("agent: restarts exhausted end the job with the last failure's code", "[agent]") {
    auto config = test_config(2, 2);
    auto run = run_agent(config, [](int, int lr) {
        return lr == 1 ? std::optional(WorkerExit{0, SIGSEGV}) : runs_until_signalled();
    });
    CHECK(run.code == 128 + SIGSEGV);
    CHECK(run.launches->attempts == 3);
    CHECK(contains(run.log, "restart 2 of 2"));
    CHECK_FALSE(contains(run.log, "restart 3"));
    CHECK(contains(run.report, "restarts used: 2 of 2"));
    CHECK(contains(run.report, "SIGSEGV"));
}

TEST_CASE("agent: SIGTERM during an attempt stops the workers and ends with 128+15", "[agent]") {
    auto config = test_config(2, 3);
    auto run = run_agent(
        config, [](int, int) { return runs_until_signalled(); },
        [](int, int lr) {
            if (lr == 1) ::raise(SIGTERM);  // the agent's signal_set catches it
        });
    CHECK(run.code == 128 + SIGTERM);
    CHECK(run.launches->attempts == 1);  // a stop is no failure: nothing restarts
    CHECK(run.launches->signalled(SIGTERM) == 2);
    CHECK(contains(run.log, "received SIGTERM: stopping the workers"));
    CHECK_FALSE(contains(run.report, "worker group failed"));  // no failure report
}

TEST_CASE("agent: a lost node ends the round and the workers restart with the next placement",
          "[agent]") {
    auto config = test_config(2, 3);
    FakeMembership rounds;
    rounds.rounds = {round_placement(1, 1, 3, 2), round_placement(2, 0, 2, 2)};
    rounds.ends[1] =
        RoundEnd{.reason = EndReason::NodeLost, .final = false, .message = "node c lost"};
    auto run = run_agent(
        config, [](int attempt, int) { return attempt == 0 ? runs_until_signalled() : exits(0); },
        {}, &rounds);
    CHECK(run.code == 0);
    REQUIRE(run.launches->attempts == 2);
    CHECK(contains(run.log, "round 1 ended: node c lost; stopping the workers"));
    CHECK(run.launches->signalled(SIGTERM) == 2);
    const auto before = run.launches->of_attempt(0);
    const auto after = run.launches->of_attempt(1);
    REQUIRE(before.size() == 2);
    REQUIRE(after.size() == 2);
    CHECK(before[0].env.at("RANK") == "2");
    CHECK(before[0].env.at("WORLD_SIZE") == "6");
    CHECK(after[0].env.at("RANK") == "0");
    CHECK(after[1].env.at("RANK") == "1");
    CHECK(after[1].env.at("WORLD_SIZE") == "4");
    CHECK(after[1].env.at("GROUP_RANK") == "0");
    CHECK(rounds.calls == std::vector<std::string>{"join", "watch 1", "join", "watch 2",
                                                   "success 2", "leaving 2: exiting with code 0",
                                                   "drained", "stop"});
}

TEST_CASE("agent: a scale-up round end restarts the workers in the larger group", "[agent]") {
    auto config = test_config(2, 0);
    FakeMembership rounds;
    rounds.rounds = {round_placement(1, 0, 1, 2), round_placement(2, 1, 2, 2)};
    rounds.ends[1] =
        RoundEnd{.reason = EndReason::ScaleUp, .final = false, .message = "a node is waiting"};
    auto run = run_agent(
        config, [](int attempt, int) { return attempt == 0 ? runs_until_signalled() : exits(0); },
        {}, &rounds);
    CHECK(run.code == 0);
    REQUIRE(run.launches->attempts == 2);
    const auto after = run.launches->of_attempt(1);
    REQUIRE(after.size() == 2);
    CHECK(after[0].env.at("RANK") == "2");
    CHECK(after[1].env.at("RANK") == "3");
    CHECK(after[1].env.at("WORLD_SIZE") == "4");
    CHECK(after[1].env.at("GROUP_RANK") == "1");
    CHECK(after[1].env.at("TORCHELASTIC_RESTART_COUNT") == "0");  // scale-up is no restart
    // Said once, as news: a node joining is not a warning.
    CHECK(contains(run.log, "[info] round 1 ended: a node is waiting"));
    CHECK_FALSE(contains(run.log, "[warning] round 1 ended"));
}

TEST_CASE("agent: a worker failure on one node is reported to the round", "[agent]") {
    auto config = test_config(2, 0);
    FakeMembership rounds;
    rounds.rounds = {round_placement(1, 1, 2, 2)};
    auto run = run_agent(
        config,
        [](int, int lr) { return lr == 0 ? std::optional(exits(7)) : runs_until_signalled(); }, {},
        &rounds);
    CHECK(run.code == 7);
    REQUIRE(rounds.calls.size() == 6);
    CHECK(rounds.calls[2] ==
          "failure 1: worker rank 2 (local rank 0) on testhost failed: exit code 7");
    CHECK(rounds.calls[3] == "leaving 1: exiting with code 7");
    CHECK(contains(run.report, "2 (local rank 0)"));  // the local root cause, reported here
}

TEST_CASE("agent: SIGTERM while waiting for a round ends the job without workers", "[agent]") {
    auto config = test_config(2, 0);
    FakeMembership rounds;  // no round ever closes
    rounds.on_join_waiting = [] { ::raise(SIGTERM); };
    auto run = run_agent(
        config, [](int, int) { return runs_until_signalled(); }, {}, &rounds);
    CHECK(run.code == 128 + SIGTERM);
    CHECK(run.launches->launches.empty());
    CHECK(rounds.calls ==
          std::vector<std::string>{"join", "leaving 0: exiting with code 143", "stop"});
}

TEST_CASE("agent: a lost store stops the workers and ends the job with 1", "[agent]") {
    auto config = test_config(2, 3);
    FakeMembership rounds;
    rounds.rounds = {round_placement(1, 0, 2, 2)};
    rounds.lost[1] = "the rendezvous store stopped answering";
    auto run = run_agent(
        config, [](int, int) { return runs_until_signalled(); }, {}, &rounds);
    CHECK(run.code == 1);
    CHECK(run.launches->attempts == 1);
    CHECK(run.launches->signalled(SIGTERM) == 2);
    CHECK(contains(run.log, "the rendezvous store stopped answering; stopping the workers"));
    CHECK(contains(run.report, "ptrun: job failed: the rendezvous store stopped answering"));
    CHECK(rounds.calls == std::vector<std::string>{"join", "watch 1",
                                                   "leaving 1: exiting with code 1", "drained",
                                                   "stop"});
}

TEST_CASE("agent: a job declared complete while local workers run does not end in success",
          "[agent]") {
    auto config = test_config(2, 0);
    FakeMembership rounds;
    rounds.rounds = {round_placement(1, 0, 2, 2)};
    rounds.ends[1] = RoundEnd{.reason = EndReason::Complete, .final = true, .exit_code = 0};
    auto run = run_agent(
        config, [](int, int) { return runs_until_signalled(); }, {}, &rounds);
    CHECK(run.code == kExitUnseenSuccess);
    CHECK(contains(run.report,
                   "declared the job complete (round 1) while 2 of this node's 2 "
                   "workers were still running"));
}

}  // namespace ptrun::launcher
