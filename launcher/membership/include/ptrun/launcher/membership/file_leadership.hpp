#pragma once
/// The file rendezvous's coordinator role (`--rdzv-conf store_type=file`): the agent holding an
/// exclusive flock(2) on `<file>.lead` coordinates, on a FileStore of the rendezvous file; the
/// kernel (or the NFS server) releases the lock when its holder dies, and another agent, trying
/// once per heartbeat, takes over from the state the last one left in the file. Each agent's
/// alive key exists from its start to its clean exit; a killed agent's stays, and the
/// coordinator then judges it by its heartbeat counter (CoordinatorOptions::state_key).

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptrun/launcher/membership/coordinator.hpp"
#include "ptrun/launcher/membership/membership.hpp"

namespace ptrun::launcher {

struct FileLeadershipOptions {
    std::string path;  ///< the rendezvous file
    std::string self_id;
    /// What the coordinator runs with while this node leads; its connect, state_key, self_id
    /// and forget_job are set here.
    CoordinatorOptions coordinator;
};

class FileLeadership final : public RoundHost {
  public:
    /// Writes this agent's alive key and starts trying for the role. Throws rdzv::StoreError
    /// naming the path when the files cannot be opened.
    explicit FileLeadership(FileLeadershipOptions options);
    /// Stops coordinating (the lock goes: another agent takes over at its next try) and removes
    /// this agent's alive key; once the job is drained, its keys.
    ~FileLeadership() override;
    FileLeadership(const FileLeadership&) = delete;
    FileLeadership& operator=(const FileLeadership&) = delete;

    /// As EtcdLeadership::wait_drained: while coordinating, waits (at most `timeout`) until
    /// every other member has left; the job's keys go when this object does.
    bool wait_drained(const std::string& self, std::chrono::milliseconds timeout) override;
    /// While coordinating: waits until every other member has left; otherwise nullopt at once.
    std::optional<std::vector<std::string>> wait_members_left(
        const std::string& self, std::chrono::milliseconds timeout) override;
    /// The spares, while this node coordinates.
    std::vector<std::string> spare_hosts() const override;
    /// True while this node holds the coordinator role.
    bool leads() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::launcher
