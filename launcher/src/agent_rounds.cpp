#include <boost/asio/post.hpp>

#include "agent_impl.hpp"
#include "ptrun/launcher/duration_text.hpp"

namespace ptrun::launcher {
namespace asio = boost::asio;

void Agent::Impl::join_round() {
    membership->session->join(
        [this](NodePlacement p) { asio::post(io, [this, p = std::move(p)] { start_round(p); }); },
        [this](RendezvousError e) {
            asio::post(io, [this, e] {
                if (finished) return;
                log->error("{}", e.what());
                finish(e.exit_code);
            });
        });
}

void Agent::Impl::start_round(const NodePlacement& a) {
    if (finished) return;
    placement = a;
    state.restart_count = a.restart_count;
    last_round_end.reset();
    log->info(
        "round {}: group rank {} of {} node(s), ranks {}..{} of world size {}, restart {} of {}",
        a.round, a.group_rank, a.nodes, placement.rank_base,
        placement.rank_base + config.nproc_per_node - 1, placement.world_size, a.restart_count,
        config.max_restarts);
    membership->session->watch(
        a, [this](RoundEnd end) { asio::post(io, [this, end] { on_round_end(end); }); },
        [this](std::string message) {
            asio::post(io, [this, message] { on_store_lost(message); });
        });
    start_attempt();
}

void Agent::Impl::on_round_end(const RoundEnd& end) {
    if (finished) return;
    last_round_end = end;
    alive_at_round_end = state.alive;
    if (end.reason != EndReason::Complete) {
        log->warn("round {} ended: {}{}", placement.round, end.message,
                  end.final ? "" : "; stopping the workers to re-form the group");
    }
    apply(RoundEnded{.final = end.final, .exit_code = end.final ? end.exit_code : 0});
}

void Agent::Impl::on_store_lost(const std::string& message) {
    if (finished) return;
    log->error("{}; stopping the workers", message);
    last_round_end = RoundEnd{.reason = EndReason::Error, .final = true, .message = message};
    apply(RoundEnded{.final = true, .exit_code = 1});
}

void Agent::Impl::report_local_failure() {
    if (!membership || !root_cause) return;
    const std::string what =
        root_cause->cause.empty() ? "failed: " + describe(root_cause->exit) : root_cause->cause;
    const RoundEnd end{.reason = EndReason::Failure,
                       .final = false,
                       .exit_code = root_cause->hung ? kExitHung : root_cause->exit.shell_code(),
                       .host = config.hostname,
                       .rank = root_cause->rank,
                       .message = "worker rank " + std::to_string(root_cause->rank) +
                                  " (local rank " + std::to_string(root_cause->local_rank) +
                                  ") on " + config.hostname + " " + what};
    membership->session->report_failure(placement.round, end);
}

void Agent::Impl::leave(int code) {
    std::string why = state.stop_signal ? "stopped by " + signal_name(state.stop_signal)
                                        : "exiting with code " + std::to_string(code);
    membership->session->report_leaving(placement.round, why);
    const bool job_over = last_round_end && last_round_end->final;
    if (membership->coordinator && job_over &&
        !membership->coordinator->wait_drained(membership->self_id, membership->close_timeout)) {
        log->warn("not every node left within close_timeout ({}); stopping the store anyway",
                  seconds_text(membership->close_timeout));
    }
    membership->session->stop();
}

}  // namespace ptrun::launcher
