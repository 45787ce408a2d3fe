#include "ptrun/launcher/agent/requeue_wait.hpp"

#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

#include "ptrun/launcher/output/duration_text.hpp"

namespace ptrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;

std::string waited_since(Clock::time_point start) {
    return seconds_text(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
}

std::string joined(const std::vector<std::string>& hosts) {
    std::string text;
    for (const auto& h : hosts) text += (text.empty() ? "" : ", ") + h;
    return text;
}

}  // namespace

Clock::time_point requeue_deadline(Clock::time_point checkpoint_started,
                                   std::chrono::milliseconds checkpoint_grace,
                                   std::chrono::milliseconds shutdown_timeout) {
    return checkpoint_started + checkpoint_grace + shutdown_timeout + kRequeueWaitMargin;
}

RequeueWaitResult wait_for_other_nodes(RoundHost* host, const std::string& self,
                                       Clock::time_point deadline) {
    const auto start = Clock::now();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - start);
    const auto budget = std::max(left, std::chrono::milliseconds(0));
    const std::string bound = " (--checkpoint-grace + --shutdown-timeout + " +
                              seconds_text(kRequeueWaitMargin) + " after the checkpoint signal)";
    std::optional<std::vector<std::string>> running;
    if (host) running = host->wait_members_left(self, budget);
    if (running && running->empty()) {
        return {true, "waited " + waited_since(start) +
                          " until every other node's workers had ended (each node's ptrun left "
                          "the rendezvous)"};
    }
    if (running) {
        return {false, "waited " + waited_since(start) + bound + " for the other nodes' " +
                           "workers to end, but the ptrun of " + joined(*running) +
                           " has not left the rendezvous; requeueing anyway"};
    }
    // Another node coordinates the rendezvous: nothing here says when the others are done, but
    // their workers are gone by the deadline (their grace, then SIGTERM and SIGKILL).
    std::this_thread::sleep_until(deadline);
    return {false, "this node does not coordinate the rendezvous and cannot see the other " +
                       std::string("nodes: waited ") + waited_since(start) + bound +
                       " for their workers to end"};
}

}  // namespace ptrun::launcher
