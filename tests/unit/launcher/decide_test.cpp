#include "ptrun/launcher/agent/decide.hpp"

#include <catch2/catch.hpp>
#include <csignal>

using namespace ptrun::launcher;

namespace {

GroupState running(int alive, int restart_count = 0) {
    GroupState s;
    s.alive = alive;
    s.restart_count = restart_count;
    return s;
}

const WorkerExit kOk{0, 0};
const WorkerExit kCode3{3, 0};
const WorkerExit kKilled{0, SIGKILL};

}  // namespace

TEST_CASE("decide: one row per transition of the worker group", "[launcher][decide]") {
    struct Row {
        const char* what;
        GroupState before;
        int max_restarts;
        Event event;
        ActionKind action;
        int signo;
        int exit_code;
    };
    GroupState stopping_after_failure = running(2);
    stopping_after_failure.stopping = true;
    stopping_after_failure.failure = Failure{0, kCode3};
    GroupState last_after_failure = stopping_after_failure;
    last_after_failure.alive = 1;
    GroupState stopping_by_signal = running(2);
    stopping_by_signal.stopping = true;
    stopping_by_signal.stop_signal = SIGTERM;
    GroupState interrupted = stopping_by_signal;
    interrupted.stop_signal = SIGINT;
    interrupted.interrupts = 1;

    const Row rows[] = {
        {"a success while others run keeps waiting", running(3), 0, WorkerExited{0, kOk},
         ActionKind::None, 0, 0},
        {"the last success finishes with 0", running(1), 0, WorkerExited{0, kOk},
         ActionKind::Finish, 0, 0},
        {"a failure stops the others with SIGTERM", running(3), 0, WorkerExited{1, kCode3},
         ActionKind::TerminateGroup, SIGTERM, 0},
        {"a failure of the only worker without restarts finishes with its code", running(1), 0,
         WorkerExited{0, kCode3}, ActionKind::Finish, 0, 3},
        {"a failure of the only worker with restarts left restarts", running(1), 2,
         WorkerExited{0, kCode3}, ActionKind::RestartGroup, 0, 0},
        {"a signal death finishes with 128+signal", running(1), 0, WorkerExited{0, kKilled},
         ActionKind::Finish, 0, 137},
        {"exits while stopping after a failure keep waiting", stopping_after_failure, 0,
         WorkerExited{1, kOk}, ActionKind::None, 0, 0},
        {"the last exit after a failure finishes with the first failure's code", last_after_failure,
         0, WorkerExited{1, WorkerExit{0, SIGTERM}}, ActionKind::Finish, 0, 3},
        {"the last exit after a failure restarts when restarts remain", last_after_failure, 1,
         WorkerExited{1, WorkerExit{0, SIGTERM}}, ActionKind::RestartGroup, 0, 0},
        {"SIGTERM is forwarded and arms the grace", running(2), 0, SignalReceived{SIGTERM, true},
         ActionKind::TerminateGroup, SIGTERM, 0},
        {"SIGUSR1 is only forwarded", running(2), 0, SignalReceived{SIGUSR1, false},
         ActionKind::Forward, SIGUSR1, 0},
        {"a second stop signal is forwarded again", stopping_by_signal, 0,
         SignalReceived{SIGTERM, true}, ActionKind::Forward, SIGTERM, 0},
        {"a second SIGINT escalates to SIGKILL", interrupted, 0, SignalReceived{SIGINT, true},
         ActionKind::KillGroup, SIGKILL, 0},
        {"a stop signal after a failure wins over restarting", stopping_after_failure, 3,
         SignalReceived{SIGTERM, true}, ActionKind::Forward, SIGTERM, 0},
        {"the last exit after a stop signal finishes with 128+signal",
         [] {
             GroupState s;
             s.alive = 1;
             s.stopping = true;
             s.stop_signal = SIGTERM;
             return s;
         }(),
         3, WorkerExited{0, WorkerExit{0, SIGTERM}}, ActionKind::Finish, 0, 143},
        {"the grace running out kills the group", stopping_by_signal, 0, GraceExpired{},
         ActionKind::KillGroup, SIGKILL, 0},
        {"the grace running out when nothing is left does nothing", running(0), 0, GraceExpired{},
         ActionKind::None, 0, 0},
    };
    for (const auto& row : rows) {
        SECTION(row.what) {
            auto d = decide(row.before, RestartPolicy{row.max_restarts}, row.event);
            CHECK(d.action.kind == row.action);
            CHECK(d.action.signo == row.signo);
            CHECK(d.action.exit_code == row.exit_code);
        }
    }
}

TEST_CASE("decide: a restart advances the restart count and clears the failure",
          "[launcher][decide]") {
    auto d = decide(running(1, 1), RestartPolicy{3}, WorkerExited{0, kCode3});
    REQUIRE(d.action.kind == ActionKind::RestartGroup);
    CHECK(d.next.restart_count == 2);
    CHECK_FALSE(d.next.failure);
    CHECK_FALSE(d.next.stopping);
}

TEST_CASE("decide: the first failure is remembered, later ones are not", "[launcher][decide]") {
    auto first = decide(running(3), RestartPolicy{0}, WorkerExited{2, kCode3});
    REQUIRE(first.next.failure);
    CHECK(first.next.failure->local_rank == 2);
    auto second = decide(first.next, RestartPolicy{0}, WorkerExited{0, kKilled});
    CHECK(second.next.failure->local_rank == 2);
    auto last = decide(second.next, RestartPolicy{0}, WorkerExited{1, kOk});
    CHECK(last.action.kind == ActionKind::Finish);
    CHECK(last.action.exit_code == 3);
}

TEST_CASE("decide: a failure that is the group's last exit is still named as the first failure",
          "[launcher][decide]") {
    // A peer exited 0 earlier: the failing worker is the last one alive, so the decision restarts
    // at once and its next state no longer holds the failure; the agent must still learn its cause.
    auto peer_done = decide(running(2), RestartPolicy{3}, WorkerExited{0, kOk});
    auto d = decide(peer_done.next, RestartPolicy{3}, WorkerExited{1, kCode3});
    REQUIRE(d.action.kind == ActionKind::RestartGroup);
    CHECK_FALSE(d.next.failure);
    REQUIRE(d.first_failure);
    CHECK(*d.first_failure == Failure{1, kCode3});
    CHECK_FALSE(decide(running(2), RestartPolicy{3}, WorkerExited{0, kOk}).first_failure);
    auto stopping = decide(running(2), RestartPolicy{3}, WorkerExited{0, kCode3});
    CHECK(stopping.first_failure);
    CHECK_FALSE(decide(stopping.next, RestartPolicy{3}, WorkerExited{1, kCode3}).first_failure);
}

TEST_CASE("decide: restarts are exhausted exactly at max_restarts", "[launcher][decide]") {
    CHECK(decide(running(1, 1), RestartPolicy{2}, WorkerExited{0, kCode3}).action.kind ==
          ActionKind::RestartGroup);
    CHECK(decide(running(1, 2), RestartPolicy{2}, WorkerExited{0, kCode3}).action.kind ==
          ActionKind::Finish);
}

namespace {

GroupState node_running(int alive) {
    GroupState s = running(alive);
    s.distributed = true;
    return s;
}

}  // namespace

TEST_CASE("decide: multi-node rows: the round's end decides restarts, never the agent",
          "[launcher][decide]") {
    // Every local success is reported, then the node waits for the round to end.
    auto success = decide(node_running(1), RestartPolicy{5}, WorkerExited{0, kOk});
    CHECK(success.action.kind == ActionKind::ReportSuccess);
    CHECK(success.next.reported_success);
    auto complete = decide(success.next, RestartPolicy{5}, RoundEnded{true, 0});
    CHECK(complete.action == Action{ActionKind::Finish, 0, 0});

    // A local failure stops the group; once it is gone the node waits for the round's end.
    auto failed = decide(node_running(2), RestartPolicy{5}, WorkerExited{0, kCode3});
    CHECK(failed.action.kind == ActionKind::TerminateGroup);
    auto gone = decide(failed.next, RestartPolicy{5}, WorkerExited{1, WorkerExit{0, SIGTERM}});
    CHECK(gone.action.kind == ActionKind::None);
    auto rejoin = decide(gone.next, RestartPolicy{5}, RoundEnded{false, 0});
    CHECK(rejoin.action.kind == ActionKind::Rejoin);
    CHECK_FALSE(rejoin.next.round_end);  // the state is clean for the next round
    CHECK_FALSE(rejoin.next.stopping);
    CHECK_FALSE(rejoin.next.failure);
    CHECK(rejoin.next.restart_count == 0);  // the next assignment brings the count

    // A round ended elsewhere stops running workers, then the node rejoins or finishes.
    auto remote = decide(node_running(2), RestartPolicy{5}, RoundEnded{false, 0});
    CHECK(remote.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
    auto one_left = decide(remote.next, RestartPolicy{5}, WorkerExited{0, WorkerExit{0, SIGTERM}});
    CHECK(one_left.action.kind == ActionKind::None);
    CHECK(decide(one_left.next, RestartPolicy{5}, WorkerExited{1, WorkerExit{0, SIGTERM}})
              .action.kind == ActionKind::Rejoin);
    auto final_end = decide(node_running(1), RestartPolicy{5}, RoundEnded{true, 3});
    auto last = decide(final_end.next, RestartPolicy{5}, WorkerExited{0, WorkerExit{0, SIGTERM}});
    CHECK(last.action == Action{ActionKind::Finish, 0, 3});

    // A scale-up after the local workers succeeded runs them again in the new round.
    CHECK(decide(success.next, RestartPolicy{0}, RoundEnded{false, 0}).action.kind ==
          ActionKind::Rejoin);
    // A stop signal wins over everything.
    auto stopped = decide(node_running(0), RestartPolicy{5}, SignalReceived{SIGTERM, true});
    CHECK(stopped.action == Action{ActionKind::Finish, 0, 143});
}

TEST_CASE("decide: a job declared complete is a success only where every local worker succeeded",
          "[launcher][decide]") {
    // Workers still running when a final end with code 0 arrives (a forged or inconsistent end):
    // they are stopped, and the node does not exit 0.
    auto ended = decide(node_running(2), RestartPolicy{0}, RoundEnded{true, 0});
    CHECK(ended.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
    auto one = decide(ended.next, RestartPolicy{0}, WorkerExited{0, WorkerExit{0, SIGTERM}});
    auto both = decide(one.next, RestartPolicy{0}, WorkerExited{1, WorkerExit{0, SIGTERM}});
    CHECK(both.action == Action{ActionKind::Finish, 0, kExitUnseenSuccess});
    CHECK(kExitUnseenSuccess != 0);

    // A local failure, then a final "complete": still a failure.
    auto failed = decide(node_running(1), RestartPolicy{0}, WorkerExited{0, kCode3});
    auto complete = decide(failed.next, RestartPolicy{0}, RoundEnded{true, 0});
    CHECK(complete.action == Action{ActionKind::Finish, 0, kExitUnseenSuccess});

    // Workers that exit 0 after the end arrived did succeed, but were not seen to finish before
    // the job was declared complete: still not reported as success.
    auto early = decide(node_running(1), RestartPolicy{0}, RoundEnded{true, 0});
    auto exited = decide(early.next, RestartPolicy{0}, WorkerExited{0, kOk});
    CHECK(exited.action == Action{ActionKind::Finish, 0, kExitUnseenSuccess});
}

TEST_CASE("decide: a hung worker is a failure found while it runs", "[launcher][decide]") {
    // The group is ended with the signal the agent chose (SIGABRT: Python tracebacks).
    auto hung = decide(running(2), RestartPolicy{0}, HangDetected{1, SIGABRT});
    CHECK(hung.action == Action{ActionKind::TerminateGroup, SIGABRT, 0});
    REQUIRE(hung.first_failure);
    CHECK(*hung.first_failure == Failure{1, {}, true});
    // Its exit (by that signal) and the others' are not failures of their own; the job ends
    // with the documented "hung" code, not 128 + SIGABRT.
    auto one = decide(hung.next, RestartPolicy{0}, WorkerExited{1, WorkerExit{0, SIGABRT}});
    CHECK(one.action.kind == ActionKind::None);
    CHECK_FALSE(one.first_failure);
    auto both = decide(one.next, RestartPolicy{0}, WorkerExited{0, WorkerExit{0, SIGTERM}});
    CHECK(both.action == Action{ActionKind::Finish, 0, kExitHung});
    CHECK(kExitHung != 0);
    // Restarts remain: the group restarts as after any failure.
    auto with_restart = decide(running(1), RestartPolicy{1}, HangDetected{0, SIGTERM});
    auto gone = decide(with_restart.next, RestartPolicy{1}, WorkerExited{0, WorkerExit{0, 15}});
    CHECK(gone.action.kind == ActionKind::RestartGroup);
    CHECK(gone.next.restart_count == 1);
    // Already stopping (a failure or a signal came first): the hang changes nothing.
    auto failed = decide(running(2), RestartPolicy{0}, WorkerExited{0, kCode3});
    auto late = decide(failed.next, RestartPolicy{0}, HangDetected{1, SIGTERM});
    CHECK(late.action.kind == ActionKind::None);
    CHECK_FALSE(late.first_failure);
    CHECK(late.next.failure == failed.next.failure);
    // Multi-node: reported like a failure; the round's end decides.
    auto node = decide(node_running(1), RestartPolicy{3}, HangDetected{0, SIGTERM});
    CHECK(node.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
    CHECK(decide(node.next, RestartPolicy{3}, WorkerExited{0, WorkerExit{0, 15}}).action.kind ==
          ActionKind::None);
}

TEST_CASE("decide: --restart-policy failed replaces the failed worker alone",
          "[launcher][decide]") {
    RestartPolicy policy{2, true};
    auto d = decide(running(4), policy, WorkerExited{2, kKilled});
    CHECK(d.action == Action{ActionKind::ReplaceWorker, 0, 0, 2});
    CHECK(d.next.alive == 3);          // the survivors; spawning the replacement counts it
    CHECK(d.next.restart_count == 0);  // the same attempt
    CHECK(d.next.replacements == 1);
    CHECK(d.next.generation == 1);
    CHECK_FALSE(d.next.stopping);
    CHECK_FALSE(d.next.failure);
    REQUIRE(d.first_failure);
    CHECK(d.first_failure->local_rank == 2);
    CHECK(d.next.recovering == d.first_failure);

    SECTION("the survivors joining ends the recovery") {
        auto joined = decide(d.next, policy, RecoveryEnded{1, true});
        CHECK(joined.action.kind == ActionKind::None);
        CHECK_FALSE(joined.next.recovering);
        CHECK_FALSE(joined.recovery_fallback);
    }
    SECTION("a second failure is another generation, until the replacements run out") {
        auto second = decide(d.next, policy, WorkerExited{0, kCode3});
        CHECK(second.action == Action{ActionKind::ReplaceWorker, 0, 0, 0});
        CHECK(second.next.generation == 2);
        CHECK(restarts_used(second.next) == 2);
        // The first recovery's late end no longer counts.
        CHECK(decide(second.next, policy, RecoveryEnded{1, false}).action.kind == ActionKind::None);
        auto third = decide(second.next, policy, WorkerExited{1, kCode3});
        CHECK(third.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
        CHECK(third.next.stopping);
    }
    SECTION("a recovery that times out falls back to a group restart, said once") {
        GroupState replaced = d.next;
        replaced.alive += 1;  // the agent spawned the replacement
        auto timed_out = decide(replaced, policy, RecoveryEnded{1, false});
        CHECK(timed_out.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
        CHECK(timed_out.recovery_fallback);
        CHECK(timed_out.next.failure == d.first_failure);
        CHECK_FALSE(timed_out.next.recovering);
        auto s = timed_out.next;
        for (int lr : {0, 1, 3})
            s = decide(s, policy, WorkerExited{lr, WorkerExit{0, SIGTERM}}).next;
        auto last = decide(s, policy, WorkerExited{2, WorkerExit{0, SIGTERM}});
        CHECK(last.action.kind == ActionKind::RestartGroup);
        CHECK(last.next.restart_count == 1);  // the replacement's restart became this one
        CHECK(last.next.replacements == 0);
        CHECK(last.next.generation == 0);
        CHECK_FALSE(last.next.recovering);
    }
}

TEST_CASE("decide: --restart-policy failed without replacements left stops the group",
          "[launcher][decide]") {
    auto d = decide(running(2), RestartPolicy{0, true}, WorkerExited{1, kCode3});
    CHECK(d.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
}

TEST_CASE(
    "decide: multi-node --restart-policy failed replaces the worker on its node, and a "
    "fallback or another node's failure ends in the round's re-form",
    "[launcher][decide]") {
    GroupState s = running(2);
    s.distributed = true;
    RestartPolicy policy{3, true};
    auto d = decide(s, policy, WorkerExited{1, kCode3});
    CHECK(d.action == Action{ActionKind::ReplaceWorker, 0, 0, 1});
    CHECK(d.next.generation == 1);
    CHECK_FALSE(d.next.failure);
    GroupState replaced = d.next;
    replaced.alive += 1;
    replaced.generation = 4;  // the job-wide number the agent allocated

    SECTION("a timed-out recovery stops the group; the round's end then re-forms it") {
        auto timed_out = decide(replaced, policy, RecoveryEnded{4, false});
        CHECK(timed_out.recovery_fallback);
        CHECK(timed_out.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
        auto t = timed_out.next;
        t = decide(t, policy, WorkerExited{0, WorkerExit{0, SIGTERM}}).next;
        auto last = decide(t, policy, WorkerExited{1, WorkerExit{0, SIGTERM}});
        CHECK(last.action.kind == ActionKind::None);  // the failure is the round's to decide
        auto rejoin = decide(last.next, policy, RoundEnded{false, 3});
        CHECK(rejoin.action.kind == ActionKind::Rejoin);
        CHECK(rejoin.next.generation == 0);  // the next round starts in generation 0
        CHECK_FALSE(rejoin.next.recovering);
    }
    SECTION("another node's failure during the recovery ends it with the round") {
        auto ended = decide(replaced, policy, RoundEnded{false, 1});
        CHECK(ended.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
        CHECK(decide(ended.next, policy, RecoveryEnded{4, false}).action.kind == ActionKind::None);
    }
}
