#pragma once
/// Where the multi-node rendezvous keeps its state in the store. Everything lives under one
/// prefix per run id, which the store host keeps when it wipes the workers' keys between rounds.

#include <cstdint>
#include <string>

namespace ptrun::launcher {

/// Key names of one run's rendezvous.
struct RdzvKeys {
    std::string prefix;  ///< "/ptrun/rdzv/<run id>/"

    /// The coordinator's event queue (joins, failures, successes, departures).
    std::string events() const { return prefix + "events"; }
    /// How many nodes have joined the round being formed, for the progress lines of waiting nodes.
    std::string status() const { return prefix + "status"; }
    /// The admission of node `id`'s `seq`-th join: an Admission (admission.hpp, JSON), either its
    /// NodePlacement or the coordinator's refusal.
    std::string admit(const std::string& id, int seq) const {
        return admissions(id) + std::to_string(seq);
    }
    /// The prefix of every admission of node `id`.
    std::string admissions(const std::string& id) const { return prefix + "admit/" + id + "/"; }
    /// Set (to the round's number) when node `id`'s `seq`-th join waits as a spare: the round
    /// has its MAX nodes, and the node takes a place when one is lost.
    std::string spare(const std::string& id, int seq) const {
        return spare_marks(id) + std::to_string(seq);
    }
    /// The prefix of every spare mark of node `id`.
    std::string spare_marks(const std::string& id) const { return prefix + "spare/" + id + "/"; }
    /// How a running round ended (RoundEnd as JSON); set once.
    std::string end(int round) const { return rounds() + std::to_string(round) + "/end"; }
    /// The prefix of every round's keys.
    std::string rounds() const { return prefix + "round/"; }
    /// The store host's clock: a GET answers its CLOCK_MONOTONIC (TcpStoreServerOptions::
    /// clock_key); the coordinator sets it once so that the WAIT before a GET returns.
    std::string clock() const { return prefix + "clock"; }
    /// etcd backend: the coordinator role's holder (its value the holder's id; bound to its lease).
    std::string leader() const { return prefix + "leader"; }
    /// etcd backend: the coordinator's state, for the next holder of the role.
    std::string coordinator_state() const { return prefix + "coordinator"; }
    /// etcd backend: exists while agent `id` keeps its lease alive.
    std::string alive(const std::string& id) const { return prefix + "alive/" + id; }
    /// Node `id`'s heartbeat counter.
    std::string heartbeat(const std::string& id) const { return prefix + "hb/" + id; }
};

/// Added to a member's heartbeat counter when the coordinator gives its place to a spare: the
/// member's next beat reads a count at or above it and stops its workers (a node declared lost
/// while only slow or paused must not run the ranks its replacement now runs).
inline constexpr std::int64_t kEvictedBeat = std::int64_t{1} << 40;

/// The keys of run `run_id`.
inline RdzvKeys rdzv_keys(const std::string& run_id) {
    return RdzvKeys{"/ptrun/rdzv/" + run_id + "/"};
}

/// Prefix of every rendezvous key of every run: what survives the wipe between rounds.
inline constexpr const char* kRdzvKeyRoot = "/ptrun/rdzv/";

}  // namespace ptrun::launcher
