#include "ptrun/watchdog/stack_capture.hpp"

#include <fmt/format.h>

#include <boost/asio/post.hpp>

namespace ptrun::watchdog {

std::shared_ptr<StackCapture> StackCapture::start(boost::asio::io_context& io, StackTool tool,
                                                  std::vector<pid_t> pids, CommandLimits limits,
                                                  int parallel, Done done) {
    std::shared_ptr<StackCapture> self(
        new StackCapture(io, std::move(tool), limits, std::move(done)));
    for (pid_t pid : pids) self->results_.push_back(NativeStacks{pid, {}, {}, {}});
    self->running_.resize(pids.size());
    self->pending_ = pids.size();
    if (pids.empty()) {
        boost::asio::post(io, [self] {
            Done d = std::move(self->done_);
            if (d) d({});
        });
        return self;
    }
    for (int i = 0; i < std::max(parallel, 1); ++i) self->launch_next();
    return self;
}

void StackCapture::launch_next() {
    if (next_ >= results_.size()) return;
    const std::size_t index = next_++;
    if (cancelled_) {
        finished(index, CommandOutcome{.cancelled = true});
        return;
    }
    running_[index] =
        BoundedCommand::start(io_, stack_command(tool_, results_[index].pid), {"LC_ALL=C"}, limits_,
                              [self = shared_from_this(), index](CommandOutcome outcome) {
                                  self->finished(index, std::move(outcome));
                              });
}

void StackCapture::finished(std::size_t index, CommandOutcome outcome) {
    NativeStacks& r = results_[index];
    running_[index].reset();
    const std::string tool(stack_tool_name(tool_.kind));
    r.text = std::move(outcome.output);
    r.threads = tool_.kind == StackToolKind::EuStack ? parse_eu_stack(r.text, r.pid)
                                                     : parse_gdb_backtrace(r.text, r.pid);
    if (!outcome.error.empty()) {
        r.note = tool + ": " + outcome.error;
    } else if (outcome.timed_out) {
        r.note = fmt::format("{} timed out after {} ms", tool, limits_.timeout.count());
    } else if (outcome.cancelled) {
        r.note = tool + " cancelled";
    } else if (r.threads.empty()) {
        r.note = tool + " printed no stack" +
                 (outcome.exit_code ? fmt::format(" (exit code {})", *outcome.exit_code) : "");
    }
    if (outcome.truncated) r.note += (r.note.empty() ? "" : "; ") + std::string("output cut");
    if (--pending_ == 0) {
        Done d = std::move(done_);
        if (d) d(std::move(results_));
        return;
    }
    launch_next();
}

void StackCapture::cancel() {
    cancelled_ = true;
    for (auto& c : running_) {
        if (c) c->cancel();
    }
}

}  // namespace ptrun::watchdog
