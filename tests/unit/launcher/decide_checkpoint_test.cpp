// --checkpoint-signal's rows of decide(): the checkpoint signal, its grace, and what ends it.
#include <catch2/catch.hpp>
#include <csignal>

#include "ptrun/launcher/agent/decide.hpp"

using namespace ptrun::launcher;

namespace {

GroupState running(int alive) {
    GroupState s;
    s.alive = alive;
    return s;
}

/// The state after ptrun received `signo` with --checkpoint-signal SIGUSR1.
GroupState checkpointing(int alive, int signo = SIGUSR1) {
    return decide(running(alive), RestartPolicy{}, SignalReceived{signo, true, SIGUSR1}).next;
}

}  // namespace

TEST_CASE("decide: the checkpoint signal is sent to the workers with the checkpoint grace",
          "[launcher][decide][checkpoint]") {
    auto d = decide(running(2), RestartPolicy{}, SignalReceived{SIGUSR1, true, SIGUSR1});
    CHECK(d.action == Action{ActionKind::Checkpoint, SIGUSR1, 0});
    CHECK(d.next.stopping);
    CHECK(d.next.checkpoint_pending);
    CHECK(d.next.checkpoint_signal == SIGUSR1);
    CHECK(d.next.stop_signal == SIGUSR1);
}

TEST_CASE("decide: SIGTERM with --checkpoint-signal sends the checkpoint signal, not SIGTERM",
          "[launcher][decide][checkpoint]") {
    auto d = decide(running(2), RestartPolicy{}, SignalReceived{SIGTERM, true, SIGUSR1});
    CHECK(d.action == Action{ActionKind::Checkpoint, SIGUSR1, 0});
    CHECK(d.next.stop_signal == SIGTERM);
}

TEST_CASE("decide: without --checkpoint-signal SIGTERM stops the workers as always",
          "[launcher][decide][checkpoint]") {
    auto d = decide(running(2), RestartPolicy{}, SignalReceived{SIGTERM, true});
    CHECK(d.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
    CHECK(d.next.checkpoint_signal == 0);
    CHECK_FALSE(d.next.checkpoint_pending);
}

TEST_CASE("decide: during the checkpoint grace", "[launcher][decide][checkpoint]") {
    SECTION("the checkpoint signal again is only forwarded") {
        auto d = decide(checkpointing(2), RestartPolicy{}, SignalReceived{SIGUSR1, true, SIGUSR1});
        CHECK(d.action == Action{ActionKind::Forward, SIGUSR1, 0});
        CHECK(d.next.checkpoint_pending);
    }
    SECTION("SIGTERM (SLURM's end of the time limit) stops the workers now") {
        auto d = decide(checkpointing(2), RestartPolicy{}, SignalReceived{SIGTERM, true, SIGUSR1});
        CHECK(d.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
        CHECK_FALSE(d.next.checkpoint_pending);
        CHECK(d.next.checkpoint_signal == SIGUSR1);  // the report still tells the checkpoint
    }
    SECTION("SIGINT stops the workers now") {
        auto d = decide(checkpointing(2), RestartPolicy{}, SignalReceived{SIGINT, true});
        CHECK(d.action == Action{ActionKind::TerminateGroup, SIGINT, 0});
    }
    SECTION("a worker exiting, even non-zero, is no failure and keeps waiting") {
        auto d = decide(checkpointing(2), RestartPolicy{3}, WorkerExited{0, WorkerExit{1, 0}});
        CHECK(d.action.kind == ActionKind::None);
        CHECK_FALSE(d.first_failure);
    }
    SECTION("the last worker's exit finishes with 128 + the signal ptrun received") {
        auto one = decide(checkpointing(2), RestartPolicy{3}, WorkerExited{0, WorkerExit{0, 0}});
        auto d = decide(one.next, RestartPolicy{3}, WorkerExited{1, WorkerExit{0, 0}});
        CHECK(d.action == Action{ActionKind::Finish, 0, 128 + SIGUSR1});
        auto term = checkpointing(1, SIGTERM);
        CHECK(decide(term, RestartPolicy{}, WorkerExited{0, WorkerExit{0, 0}}).action ==
              Action{ActionKind::Finish, 0, 128 + SIGTERM});
    }
    SECTION("the grace running out stops the rest with SIGTERM, once") {
        auto d = decide(checkpointing(2), RestartPolicy{}, CheckpointGraceExpired{});
        CHECK(d.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
        CHECK_FALSE(d.next.checkpoint_pending);
        CHECK(decide(d.next, RestartPolicy{}, CheckpointGraceExpired{}).action.kind ==
              ActionKind::None);
        CHECK(decide(d.next, RestartPolicy{}, GraceExpired{}).action.kind == ActionKind::KillGroup);
    }
}

TEST_CASE("decide: the checkpoint grace running out when every worker exited does nothing",
          "[launcher][decide][checkpoint]") {
    auto s = checkpointing(1);
    auto gone = decide(s, RestartPolicy{}, WorkerExited{0, WorkerExit{0, 0}});
    CHECK(gone.action.kind == ActionKind::Finish);
    CHECK(decide(gone.next, RestartPolicy{}, CheckpointGraceExpired{}).action.kind ==
          ActionKind::None);
}

TEST_CASE("decide: a checkpoint signal with no worker left finishes at once",
          "[launcher][decide][checkpoint]") {
    auto d = decide(running(0), RestartPolicy{}, SignalReceived{SIGUSR1, true, SIGUSR1});
    CHECK(d.action == Action{ActionKind::Finish, 0, 128 + SIGUSR1});
}

TEST_CASE("decide: a checkpoint signal after a failure stopped the group is only forwarded",
          "[launcher][decide][checkpoint]") {
    auto failed = decide(running(2), RestartPolicy{}, WorkerExited{0, WorkerExit{3, 0}}).next;
    auto d = decide(failed, RestartPolicy{}, SignalReceived{SIGUSR1, true, SIGUSR1});
    CHECK(d.action == Action{ActionKind::Forward, SIGUSR1, 0});
    CHECK_FALSE(d.next.checkpoint_pending);
}

TEST_CASE("decide: another node's checkpoint ending the round makes these workers checkpoint",
          "[launcher][decide][checkpoint]") {
    // Multi-node: the round ended because another node's workers exited on the checkpoint
    // signal first (its SLURM signal came earlier); this node's own signal has not come yet.
    auto s = running(2);
    s.distributed = true;
    const RoundEnded preempted{.final = true, .exit_code = 128 + SIGUSR1, .checkpoint = SIGUSR1};
    auto d = decide(s, RestartPolicy{}, preempted);
    CHECK(d.action == Action{ActionKind::Checkpoint, SIGUSR1, 0});
    CHECK(d.next.checkpoint_pending);
    CHECK(d.next.checkpoint_anticipated);
    CHECK(d.next.stop_signal == 0);

    SECTION("this node's own checkpoint signal is absorbed once, then forwarded again") {
        auto own = decide(d.next, RestartPolicy{}, SignalReceived{SIGUSR1, true, SIGUSR1});
        CHECK(own.action.kind == ActionKind::None);
        CHECK_FALSE(own.next.checkpoint_anticipated);
        CHECK(own.next.checkpoint_pending);
        auto again = decide(own.next, RestartPolicy{}, SignalReceived{SIGUSR1, true, SIGUSR1});
        CHECK(again.action == Action{ActionKind::Forward, SIGUSR1, 0});
    }
    SECTION("SIGTERM as this node's notice (a checkpoint request here) is absorbed as well") {
        auto own = decide(d.next, RestartPolicy{}, SignalReceived{SIGTERM, true, SIGUSR1});
        CHECK(own.action.kind == ActionKind::None);
        CHECK(own.next.checkpoint_pending);
    }
    SECTION("the workers exiting end the node with the round's code") {
        auto one = decide(d.next, RestartPolicy{}, WorkerExited{0, WorkerExit{0, 0}});
        CHECK(one.action.kind == ActionKind::None);
        auto two = decide(one.next, RestartPolicy{}, WorkerExited{1, WorkerExit{0, 0}});
        CHECK(two.action == Action{ActionKind::Finish, 0, 128 + SIGUSR1});
    }
    SECTION("the grace running out stops the rest with SIGTERM") {
        auto late = decide(d.next, RestartPolicy{}, CheckpointGraceExpired{});
        CHECK(late.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
    }
}

TEST_CASE("decide: a checkpoint round end reaching workers already stopping changes nothing",
          "[launcher][decide][checkpoint]") {
    auto s = checkpointing(2);  // this node's own signal came first
    s.distributed = true;
    auto d = decide(s, RestartPolicy{},
                    RoundEnded{.final = true, .exit_code = 128 + SIGUSR1, .checkpoint = SIGUSR1});
    CHECK(d.action.kind == ActionKind::None);
    CHECK_FALSE(d.next.checkpoint_anticipated);
    auto plain = running(2);
    plain.distributed = true;
    auto without = decide(plain, RestartPolicy{}, RoundEnded{.final = true, .exit_code = 138});
    CHECK(without.action == Action{ActionKind::TerminateGroup, SIGTERM, 0});
}
