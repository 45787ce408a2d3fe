#include "agent_rounds.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "ptrun/launcher/output/duration_text.hpp"
#include "ptrun/launcher/process/exit_status.hpp"

namespace ptrun::launcher {
namespace asio = boost::asio;

RoundDriver::RoundDriver(Membership membership, const LaunchConfig& config,
                         boost::asio::io_context& io, std::shared_ptr<spdlog::logger> log,
                         Hooks hooks)
    : membership_(std::move(membership)),
      config_(config),
      io_(io),
      log_(std::move(log)),
      hooks_(std::move(hooks)) {}

void RoundDriver::join() {
    joining_ = true;
    membership_.session->join(
        [this](NodePlacement p) { asio::post(io_, [this, p = std::move(p)] { start_round(p); }); },
        [this](RendezvousError e) {
            asio::post(io_, [this, e] {
                joining_ = false;
                if (left_) return;
                if (e.exit_code == 0) {
                    log_->info("{}", e.what());  // a spare the job never needed: not a failure
                } else {
                    log_->error("{}", e.what());
                }
                hooks_.failed(e.exit_code);
            });
        });
}

void RoundDriver::start_round(const NodePlacement& a) {
    joining_ = false;
    if (left_) return;
    round_ = a;
    last_end_.reset();
    log_->info(
        "round {}: group rank {} of {} node(s), ranks {}..{} of world size {}, restart {} of {}",
        a.round, a.group_rank, a.nodes, a.rank_base, a.rank_base + config_.nproc_per_node - 1,
        a.world_size, a.restart_count, config_.max_restarts);
    for (const auto& note : a.notes) log_->warn("round {}: {}", a.round, note);
    membership_.session->watch(
        a, [this](RoundEnd end) { asio::post(io_, [this, end] { on_round_end(end); }); },
        [this](std::string message) {
            asio::post(io_, [this, message] { on_store_lost(message); });
        });
    hooks_.start(a);
}

void RoundDriver::on_round_end(const RoundEnd& end) {
    if (left_) return;
    last_end_ = end;
    alive_at_end_ = hooks_.alive();
    if (end.reason != EndReason::Complete) {
        // A node joining is news, not trouble: a warning is for what went wrong.
        const auto level =
            end.reason == EndReason::ScaleUp ? spdlog::level::info : spdlog::level::warn;
        log_->log(level, "round {} ended: {}{}", round_.round, end.message, consequence(end));
        if (hooks_.changed)
            hooks_.changed("round " + std::to_string(round_.round) + " ended: " + end.message);
    }
    const bool checkpoint = end.reason == EndReason::Checkpoint && alive_at_end_ > 0;
    hooks_.ended(RoundEnded{.final = end.final,
                            .exit_code = end.final ? end.exit_code : 0,
                            .checkpoint = checkpoint ? config_.checkpoint_signal : 0});
}

std::string RoundDriver::consequence(const RoundEnd& end) const {
    if (!end.final) return "; stopping the workers to re-form the group";
    if (end.reason != EndReason::Checkpoint || alive_at_end_ == 0) return "";
    if (config_.checkpoint_signal == 0) return "; stopping the workers (no --checkpoint-signal)";
    return "; sending " + signal_name(config_.checkpoint_signal) +
           " to the workers (--checkpoint-signal); they have " +
           seconds_text(config_.checkpoint_grace) +
           " (--checkpoint-grace) to exit, then the rest are stopped";
}

void RoundDriver::on_store_lost(const std::string& message) {
    if (left_) return;
    log_->error("{}; stopping the workers", message);
    last_end_ = RoundEnd{.reason = EndReason::Error, .final = true, .message = message};
    hooks_.ended(RoundEnded{.final = true, .exit_code = 1});
}

void RoundDriver::report_failure(const WorkerEnd& root) {
    const std::string what = root.cause.empty() ? "failed: " + describe(root.exit) : root.cause;
    const RoundEnd end{.reason = EndReason::Failure,
                       .final = false,
                       .exit_code = root.hung ? kExitHung : root.exit.shell_code(),
                       .host = config_.hostname,
                       .rank = root.rank,
                       .message = "worker rank " + std::to_string(root.rank) + " (local rank " +
                                  std::to_string(root.local_rank) + ") on " + config_.hostname +
                                  " " + what};
    membership_.session->report_failure(round_.round, end);
}

void RoundDriver::report_success() {
    if (round_.nodes > 1) log_->info("every local worker succeeded; waiting for the other nodes");
    membership_.session->report_success(round_.round);
}

void RoundDriver::leave(int code, int stop_signal, bool checkpointed) {
    left_ = true;
    std::string why = stop_signal ? "stopped by " + signal_name(stop_signal)
                                  : "exiting with code " + std::to_string(code);
    if (checkpointed) {
        membership_.session->report_checkpointed(round_.round, code, std::move(why));
    } else {
        membership_.session->report_leaving(round_.round, std::move(why));
    }
    // A checkpoint ends the job everywhere: the store host keeps the store until the others
    // have checkpointed too and left.
    const bool job_over = (last_end_ && last_end_->final) || checkpointed;
    if (membership_.coordinator && job_over &&
        !membership_.coordinator->wait_drained(membership_.self_id, membership_.close_timeout)) {
        log_->warn("not every node left within close_timeout ({}); stopping the store anyway",
                   seconds_text(membership_.close_timeout));
    }
    membership_.session->stop();
}

void RoundDriver::report(ReportKind kind, std::string text) {
    if (!left_) membership_.session->report(kind, round_.round, std::move(text));
}

std::vector<std::string> RoundDriver::spare_hosts() const {
    return membership_.coordinator ? membership_.coordinator->spare_hosts()
                                   : std::vector<std::string>{};
}

ClockOffset RoundDriver::clock_offset() const {
    if (membership_.coordinator) return {};  // the store host's clock is the timeline's
    return membership_.session->clock_offset().value_or(ClockOffset{});
}

std::string RoundDriver::end_report(int code) const {
    if (!last_end_ || !last_end_->final || code == 0) return "";
    if (last_end_->exit_code == 0) {
        return "ptrun: error: the rendezvous declared the job complete (round " +
               std::to_string(round_.round) + ") while " + std::to_string(alive_at_end_) +
               " of this node's " + std::to_string(config_.nproc_per_node) +
               " workers were still running; they were stopped and this node does not report "
               "success (a forged or inconsistent rendezvous value)\n";
    }
    if (last_end_->message.empty()) return "";
    return "ptrun: job failed: " + last_end_->message + "\n";
}

}  // namespace ptrun::launcher
