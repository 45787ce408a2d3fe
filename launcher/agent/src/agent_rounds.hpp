#pragma once
/// RoundDriver: drives this node through a multi-node job's rounds for the agent (agent.cpp),
/// which supervises the local workers. It owns the membership, the running round and how it
/// ended; the supervisor learns of rounds through `Hooks`, called on the agent's loop (session
/// callbacks come from session threads and are posted there first).

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ptrun/launcher/agent/decide.hpp"
#include "ptrun/launcher/membership/membership.hpp"
#include "ptrun/launcher/membership/node_placement.hpp"
#include "ptrun/launcher/membership/round.hpp"
#include "ptrun/launcher/output/failure_report.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

class RoundDriver {
  public:
    struct Hooks {
        /// A round closed with this node in it: start the workers with its placement.
        std::function<void(const NodePlacement&)> start;
        /// The running round ended (or the store was lost): decide() takes it from here.
        std::function<void(const RoundEnded&)> ended;
        /// The rendezvous failed for this node: the job ends with `code`.
        std::function<void(int code)> failed;
        /// Local workers running now.
        std::function<int()> alive;
        /// The running round ended other than by completing (`why`: the coordinator's message):
        /// an event for the start-up timeline; before `ended`.
        std::function<void(const std::string& why)> changed;
    };

    RoundDriver(Membership membership, const LaunchConfig& config, boost::asio::io_context& io,
                std::shared_ptr<spdlog::logger> log, Hooks hooks);

    /// Joins the next rendezvous round; its placement reaches `start`, its error `failed`.
    void join();
    /// Tells the coordinator that local worker `root` failed (ends the round everywhere).
    void report_failure(const WorkerEnd& root);
    /// Tells the coordinator every local worker of the running round succeeded.
    void report_success();
    /// Tells the coordinator this agent is leaving with `code` (`stop_signal`: stopped by it;
    /// `checkpointed`: its workers exited on --checkpoint-signal, which ends the round as a
    /// checkpoint everywhere); the store host waits (at most close_timeout) until every other
    /// node has left before its store goes away. No hook is called after it.
    void leave(int code, int stop_signal, bool checkpointed);
    /// Sends this node's report of `kind` (JSON) to the store host, tagged with the running
    /// round.
    void report(ReportKind kind, std::string text);
    /// On the store host: the host names of the nodes waiting as spares; elsewhere none.
    std::vector<std::string> spare_hosts() const;
    /// True from join() until its round closed with this node in it or the rendezvous failed.
    bool in_rendezvous() const { return joining_; }
    /// This node's clock offset to the store host, measured at the last join (0 on the host).
    ClockOffset clock_offset() const;
    /// What the console says of a job the rendezvous ended, when the node ends with `code` and
    /// no local failure explains it; "" when nothing.
    std::string end_report(int code) const;

  private:
    void start_round(const NodePlacement& placement);
    void on_round_end(const RoundEnd& end);
    void on_store_lost(const std::string& message);
    /// What this node does about `end`, as the tail of its log line ("" for nothing more).
    std::string consequence(const RoundEnd& end) const;

    Membership membership_;
    const LaunchConfig& config_;
    boost::asio::io_context& io_;
    std::shared_ptr<spdlog::logger> log_;
    Hooks hooks_;
    bool left_ = false;
    bool joining_ = false;              ///< in_rendezvous()
    NodePlacement round_;               ///< the running round (round 0 before the first)
    std::optional<RoundEnd> last_end_;  ///< how the running round ended
    int alive_at_end_ = 0;              ///< local workers running when it ended
};

}  // namespace ptrun::launcher
