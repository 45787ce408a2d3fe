// --restart-policy failed (issue 36): a failed worker is replaced alone in a new generation, whose
// keys the agent writes to the workers' store (generation_board.hpp); the survivors keep running
// and join it. Their joining ends the recovery; a timeout falls back to a group restart.

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/post.hpp>

#include "agent_impl.hpp"
#include "ptrun/launcher/output/duration_text.hpp"
#include "ptrun/launcher/process/environment_error.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::launcher {

namespace {

std::string rank_words(const std::vector<int>& ranks) {
    std::string text = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i)
        text += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
    return text;
}

}  // namespace

int Agent::Impl::begin_generation(const std::vector<int>& ranks) {
    if (!generations) {
        generations =
            std::make_unique<GenerationBoard>(placement.master_addr, placement.master_port);
    }
    // The number is the job's: on several nodes another agent may have begun generations.
    return generations->begin(ranks, config.recovery_timeout, [this](int generation, bool joined) {
        boost::asio::post(io, [this, generation, joined] {
            if (!finished) generation_ended(generation, joined);
        });
    });
}

void Agent::Impl::replace_worker(int lr) {
    auto& old = workers[static_cast<std::size_t>(lr)];
    const int rank = old.end.rank;
    const std::string cause = root_cause ? failure_line(*root_cause) : "a worker failed";
    if (!recovery_cause) recovery_cause = root_cause;  // what a fallback reports (multi-node)
    root_cause.reset();
    if (recovery_replaced.empty()) recovery_started = std::chrono::steady_clock::now();
    if (std::find(recovery_replaced.begin(), recovery_replaced.end(), rank) ==
        recovery_replaced.end()) {
        recovery_replaced.push_back(rank);  // a replacement that failed too is the same rank
    }
    try {
        state.generation = begin_generation({rank});
    } catch (const rdzv::StoreError& e) {
        recovery_why = fmt::format("cannot write generation {}'s keys to the workers' store ({})",
                                   state.generation, e.what());
        apply(RecoveryEnded{state.generation, false});
        return;
    }
    record(Phase::Restart, -1,
           fmt::format("{}; generation {}: replacing {} alone", cause, state.generation,
                       rank_words({rank})));
    log->warn(
        "{}; replacing it alone, the other workers keep running (generation {}, restart {} of {})",
        cause, state.generation, restarts_used(state), policy.max_restarts);
    logs.begin_generation(lr, state.generation);
    workers[static_cast<std::size_t>(lr)] = Worker{};
    try {
        auto request = worker_request(lr, worker_identity(lr, logs.error_dir(lr)));
        if (watch) watch_worker(static_cast<std::size_t>(lr), request);
        spawn(lr, request);
        if (config.report_bindings) report_binding(lr, request);
    } catch (const EnvironmentError& e) {
        log->error("{}", e.what());
        finish(1);  // stops the survivors
    }
}

bool Agent::Impl::take_lost_place() {
    std::vector<int> ranks;
    for (int lr = 0; lr < config.nproc_per_node; ++lr) ranks.push_back(placement.rank_base + lr);
    WorkerEnd cause;
    cause.host = config.hostname;
    cause.rank = placement.rank_base;
    cause.exit = WorkerExit{1, 0};
    cause.time = std::chrono::system_clock::now();
    recovery_started = std::chrono::steady_clock::now();
    recovery_replaced = ranks;
    try {
        state.generation = begin_generation(ranks);
    } catch (const rdzv::StoreError& e) {
        cause.cause = fmt::format(
            "could not take a lost node's place: cannot write a generation's keys to the "
            "workers' store ({})",
            e.what());
        log->error("{}", cause.cause);
        recovery_replaced.clear();
        root_cause = cause;
        rounds->report_failure(cause);  // the round re-forms, this node with it
        return false;
    }
    cause.cause =
        fmt::format("took a lost node's place, but generation {} was not joined", state.generation);
    recovery_cause = cause;
    state.recovering = Failure{0, cause.exit};
    state.replacements += 1;  // the coordinator counted the restart; on_recovery gives it back
    record(Phase::Restart, -1,
           fmt::format("taking a lost node's place; generation {}: {} start", state.generation,
                       rank_words(ranks)));
    log->warn(
        "taking the place of a lost node in round {}: {} start in generation {}; the other "
        "nodes keep running",
        placement.round, rank_words(ranks), state.generation);
    return true;
}

void Agent::Impl::generation_ended(int generation, bool joined) {
    if (!state.recovering || generation != state.generation || state.stopping) return;
    if (joined) {
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - recovery_started);
        const std::string which = rank_words(recovery_replaced);
        log->info("generation {} joined by all {} workers {} after the failure ({} replaced)",
                  generation, placement.world_size, seconds_text(took), which);
        record(Phase::GenerationJoined, -1,
               fmt::format("generation {}: {} replaced", generation, which));
        recovery_replaced.clear();
        recovery_cause.reset();
    } else {
        recovery_why =
            fmt::format("the workers did not all join generation {} within {} (--recovery-timeout)",
                        generation, seconds_text(config.recovery_timeout));
    }
    apply(RecoveryEnded{generation, joined});
}

}  // namespace ptrun::launcher
