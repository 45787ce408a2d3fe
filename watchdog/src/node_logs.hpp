#pragma once
// One node's part of `ptrun logs` (logs_client.hpp): its ranks' lines, read over its health
// endpoint, from the last lines on and then from where the previous read ended.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/watchdog/log_follow.hpp"
#include "ptrun/watchdog/log_lines.hpp"
#include "ptrun/watchdog/logs_client.hpp"

namespace ptrun::watchdog::detail {

/// `text` with control characters (tab aside) shown as '?': it came over the network.
std::string shown(std::string text);

/// The merged lines as text, each "[host:rank] line\n".
std::string lines_text(std::vector<std::vector<SourcedLine>> sources);

class NodeLogs {
  public:
    NodeLogs(LogsNode node, std::vector<int> ranks, std::size_t tail,
             std::chrono::milliseconds within)
        : node_(std::move(node)), ranks_(std::move(ranks)), tail_(tail), within_(within) {}

    /// Reads every rank's lines: its last `tail` ones the first time, then those written since
    /// the previous read, on into the files of its later attempts. False when the node did not
    /// answer (missing() says so; later reads give nothing).
    bool read(std::vector<std::vector<SourcedLine>>& sources);
    /// Long-polls the node (log_follow.hpp) for up to `wait`; the answer, or nullopt when it did
    /// not answer (missing() says so).
    std::optional<LogsWaitAnswer> wait(std::chrono::milliseconds wait);
    /// Sentences about what did not come since the last call.
    std::vector<std::string> take_missing();
    /// The node's name in sentences: "node 1 (10.0.0.2:29501)".
    std::string name() const;

  private:
    /// Why the node did not answer, with what would reach it.
    void lost(const std::string& why);

    struct Offsets {
        std::optional<std::uint64_t> out, err;
        std::optional<std::uint64_t> files;  ///< the rank's set of files they belong to
    };
    LogsNode node_;
    std::vector<int> ranks_;
    std::size_t tail_;
    std::chrono::milliseconds within_;
    std::map<int, Offsets> next_;
    std::uint64_t seen_ = 0;
    bool gone_ = false;
    std::vector<std::string> missing_;
};

}  // namespace ptrun::watchdog::detail
