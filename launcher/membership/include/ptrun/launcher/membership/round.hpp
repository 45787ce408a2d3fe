#pragma once
/// What the nodes of a multi-node job agree on, one rendezvous round at a time, and how it
/// travels through the store (JSON values).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ptrun::launcher {

/// One agent as it introduces itself when joining a round.
struct NodeInfo {
    std::string id;  ///< unique per agent process: hostname:pid:random
    std::string hostname;
    std::string addr;    ///< the address it reaches the store from (--local-addr when given)
    int nproc = 1;       ///< its workers per node
    int node_rank = -1;  ///< --node-rank when given, else -1
    bool is_store_host = false;
    int max_restarts = 0;         ///< every node must agree
    bool replace_failed = false;  ///< --restart-policy failed; every node must agree
    /// etcd backend: the port of the workers' store this node hosts for the round it joins (its
    /// `addr`); the round's group rank 0 serves it. 0 with c10d (the store host serves it).
    std::uint16_t store_port = 0;
    bool operator==(const NodeInfo&) const = default;
};

/// A closed round: its members in group-rank order and where the workers' store is.
struct RoundAssignment {
    int round = 0;
    int restart_count = 0;  ///< failure rounds so far: TORCHELASTIC_RESTART_COUNT
    std::vector<NodeInfo> members;
    std::string master_addr;
    std::uint16_t master_port = 0;
    /// Why members of the last round are not in this one (a node lost while it formed).
    std::vector<std::string> notes;

    /// Group rank of node `id`, or -1 when it is not a member.
    int group_rank_of(const std::string& id) const;
    /// Global rank of local rank 0 on the member at `group_rank` (ranks follow group rank order).
    int rank_base(int group_rank) const;
    /// Workers of every member together.
    int world_size() const;
};

/// Why a running round ended.
/// Regroup: a node taken into the round never showed (a spare that died since its last beat):
/// the round re-forms without it, as after a scale-up, not counting a restart.
/// Checkpoint: a member's workers exited on --checkpoint-signal (the job is being preempted): the
/// job ends everywhere, the other nodes' workers get their checkpoint signal.
enum class EndReason { Failure, NodeLost, ScaleUp, Regroup, Complete, Error, Checkpoint };

/// How a round ended, as every agent of it learns. `final` ends the whole job: with exit code 0
/// after Complete, else with `exit_code` (restarts exhausted, or a configuration error).
struct RoundEnd {
    EndReason reason = EndReason::Failure;
    bool final = false;
    int exit_code = 1;
    std::string host{};  ///< the failing or lost node's hostname
    int rank = -1;       ///< the failing worker's global rank, -1 when none
    std::string message{};
    bool operator==(const RoundEnd&) const = default;
};

std::string to_text(EndReason reason);

std::string encode(const NodeInfo& node);
std::string encode(const RoundEnd& end);
/// Decoders throw std::runtime_error naming what is missing or malformed (the text came over
/// the network).
NodeInfo decode_node(const std::string& text);
RoundEnd decode_end(const std::string& text);

/// Orders `joined` into group ranks: nodes with an explicit --node-rank take that rank; the
/// others fill the free ranks in the order (store host first, hostname, id). Returns an error
/// message (empty on success) when explicit ranks repeat or do not fit the round's size.
std::string order_members(std::vector<NodeInfo>& joined);

}  // namespace ptrun::launcher
