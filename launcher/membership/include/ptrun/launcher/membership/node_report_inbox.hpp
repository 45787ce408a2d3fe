#pragma once
/// The store host's inbox of one kind of the members' reports (their timelines, or their
/// statuses): the latest text per node id, put on the coordinator's thread, read on the agent's.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace ptrun::launcher {

class NodeReportInbox {
  public:
    static constexpr std::size_t kMaxNodes = 65536;  ///< slurm::kMaxHosts
    /// What the inbox keeps of all its texts together: a report past it is dropped.
    static constexpr std::size_t kMaxTotalBytes = 256u << 20;

    /// An inbox of at most `max_nodes` nodes and `max_total_bytes` of text.
    explicit NodeReportInbox(std::size_t max_nodes = kMaxNodes,
                             std::size_t max_total_bytes = kMaxTotalBytes)
        : max_nodes_(max_nodes), max_bytes_(max_total_bytes) {}

    struct Entry {
        int round = 0;
        std::string text;
        std::chrono::steady_clock::time_point received;
    };

    /// Keeps `text` as node `id`'s latest report (of `round`), then calls the change callback
    /// (if any); a new node past the inbox's nodes, or a text that would take it past its bytes,
    /// is dropped.
    void put(const std::string& id, int round, std::string text);
    /// Every node's latest report.
    std::map<std::string, Entry> snapshot() const;
    /// Called (on the putting thread, under the inbox's lock: it must not use the inbox) after
    /// each put; the agent posts onto its loop from it. on_change(nullptr) returns once no call
    /// runs, and none comes after.
    void on_change(std::function<void()> callback);

  private:
    const std::size_t max_nodes_;
    const std::size_t max_bytes_;
    mutable std::mutex mu_;
    std::map<std::string, Entry> by_node_;
    std::size_t bytes_ = 0;
    std::function<void()> changed_;
};

}  // namespace ptrun::launcher
