// The job-wide status (issue 26): every member with --health-port publishes its /status document
// through the rendezvous store (a NodeReport, bounded), soon after each change and every
// kStatusRefresh otherwise; the store host's /status, /metrics and `ptrun status` then cover
// every node of the current round, each with the age of what it last heard.

#include <algorithm>

#include "agent_impl.hpp"
#include "ptrun/watchdog/node_status.hpp"

namespace ptrun::launcher {
namespace {

using namespace std::chrono_literals;

/// A change is published this long after it (several changes at once make one report).
constexpr std::chrono::milliseconds kStatusSettle = 200ms;
/// Without changes, a member publishes this often (its progress counts move on).
constexpr std::chrono::milliseconds kStatusRefresh = 5s;

}  // namespace

// Every member publishes, the node that gathers included (its own report is skipped when read):
// under etcd every agent holds an inbox, and which one gathers moves with the coordinator role.
void Agent::Impl::status_changed() {
    if (rounds && config.health_port && !finished) schedule_status(kStatusSettle);
}

void Agent::Impl::schedule_status(std::chrono::milliseconds delay) {
    const auto due = std::chrono::steady_clock::now() + delay;
    if (status_publish_due && *status_publish_due <= due) return;
    status_publish_due = due;
    status_publish.expires_at(due);
    status_publish.async_wait([this](boost::system::error_code ec) {
        if (ec) return;  // cancelled or moved: the newer wait publishes
        status_publish_due.reset();
        publish_status();
    });
}

void Agent::Impl::publish_status() {
    if (!rounds || !config.health_port || !watch) return;
    rounds->report(ReportKind::Status, watchdog::status_json(status_snapshot()));
    if (!finished) schedule_status(kStatusRefresh);
}

std::vector<watchdog::NodeStatus> Agent::Impl::other_node_statuses() const {
    std::vector<watchdog::NodeStatus> nodes;
    if (!status_inbox) return nodes;
    const auto now = std::chrono::steady_clock::now();
    for (const auto& [id, report] : status_inbox->snapshot()) {
        if (id == self_id || report.round != placement.round) continue;  // not in this round
        const double age = std::chrono::duration<double>(now - report.received).count();
        if (auto node = watchdog::node_status_of(report.text, age)) nodes.push_back(*node);
    }
    std::sort(nodes.begin(), nodes.end(),
              [](const auto& a, const auto& b) { return a.node_rank < b.node_rank; });
    return nodes;
}

}  // namespace ptrun::launcher
