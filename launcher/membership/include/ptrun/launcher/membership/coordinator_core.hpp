#pragma once
/// The rendezvous coordinator as a pure state machine: events from agents and the clock in,
/// store writes out. The store host runs it (coordinator.hpp drives it over the store).
///
/// Rounds: nodes join; once MIN have joined a last-call window admits more up to MAX; the round
/// closes with group ranks (round.hpp order_members) — at once, without a last call, when every
/// survivor of the previous round is back — and runs until it ends: a worker failure
/// or a lost node (both count as a restart), a node waiting to join while the round has fewer
/// than MAX (scale-up; not a restart), or every member succeeding (complete). A failure round
/// beyond max restarts ends the job (`final`).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ptrun/launcher/membership/join_queue.hpp"
#include "ptrun/launcher/membership/rdzv_events.hpp"
#include "ptrun/launcher/membership/round.hpp"

namespace ptrun::launcher {

using SteadyTime = std::chrono::steady_clock::time_point;

struct CoordinatorPolicy {
    int min_nodes = 1;
    int max_nodes = 1;
    int max_restarts = 0;
    bool replace_failed = false;  ///< --restart-policy failed: a member must have it too
    std::chrono::milliseconds last_call{30'000};
    std::chrono::milliseconds lost_after{15'000};  ///< heartbeat x keep_alive_max_attempt
    std::chrono::milliseconds heartbeat{5'000};    ///< how often counters are read
    /// Where workers find their store; empty: the store of the round's group rank 0 (its
    /// NodeInfo addr and store_port), which each round may put elsewhere (etcd backend).
    std::string master_addr;
    std::uint16_t master_port = 0;
};

/// Store writes the driver performs, in order.
struct PublishRound {
    RoundAssignment assignment;
    std::vector<std::pair<std::string, int>> admitted;  ///< (node id, join seq)
};
struct EndRound {
    int round = 0;
    RoundEnd end;
};
struct RejectJoin {
    std::string id;
    int seq = 0;
    std::string message;
};
struct PublishStatus {
    int joined = 0;
};
/// Nodes that joined while `round` has its MAX nodes: they wait as spares (in join order) and
/// take the places of nodes lost later.
struct MarkSpares {
    int round = 0;
    std::vector<std::pair<std::string, int>> spares;  ///< (node id, join seq)
};
/// --restart-policy failed: a spare takes a lost member's place in the running round (the same
/// group rank and ranks; its workers start as a new generation) and the round goes on.
struct ReplaceMember {
    RoundAssignment assignment;            ///< the running round, the spare in the lost place
    int group_rank = 0;                    ///< the place taken
    std::pair<std::string, int> admitted;  ///< the spare's (node id, join seq)
    std::string lost_id;  ///< the lost member's node id: its heartbeat counter gets kEvictedBeat
    std::string lost_host;
    std::string why;  ///< why the member was declared lost
};
using CoordinatorCommand =
    std::variant<PublishRound, EndRound, RejectJoin, PublishStatus, MarkSpares, ReplaceMember>;

class CoordinatorCore {
  public:
    explicit CoordinatorCore(CoordinatorPolicy policy);

    /// An agent's message at `now`.
    std::vector<CoordinatorCommand> on_event(const RdzvEvent& event, SteadyTime now);
    /// Heartbeat counters read at `now` (node id -> count) for watched_members(); declares
    /// silent members lost: a running round ends; a round being formed stops waiting for them
    /// and says, in its assignment's notes, that they were lost.
    std::vector<CoordinatorCommand> on_beats(const std::map<std::string, std::int64_t>& counters,
                                             SteadyTime now);
    /// Node `id` is known to be gone (its lease expired: the coordinator it ran is lost with it):
    /// as a member of the running round, the round ends as after a silent one; while a round
    /// forms, it is no longer waited for. `why` says how it was found.
    std::vector<CoordinatorCommand> on_gone(const std::string& id, const std::string& why,
                                            SteadyTime now);
    /// Time passed: closes a round whose last call is over.
    std::vector<CoordinatorCommand> on_tick(SteadyTime now);
    /// A store call made at `asked`, which should have answered within `bound` (a blocking
    /// pop's timeout; zero for a read), answered at `answered`. Later by more than a quarter
    /// heartbeat, the store served nobody meanwhile (an etcd election, a frozen store host):
    /// no node could beat either, so silence counts for lost_after from `answered` on.
    void on_store_answer(SteadyTime asked, std::chrono::milliseconds bound, SteadyTime answered);
    /// The store failed the coordinator's calls and answered again at `answered`: as above.
    void on_store_back(SteadyTime answered);

    /// When on_tick next has something to do (the last call's end), if anything.
    std::optional<SteadyTime> deadline() const { return last_call_end_; }
    /// The members watched for silence: the running round's, or while a round is formed, the
    /// last round's that have not joined it yet.
    std::vector<std::string> watched_members() const;
    /// The nodes whose heartbeats to read: watched_members() and the waiting nodes (spares), so
    /// that a dead spare leaves the list within lost_after.
    std::vector<std::string> beating_nodes() const;
    /// The nodes waiting as spares (ids; host names), in the order they take places.
    std::vector<std::string> spares() const;
    std::vector<std::string> spare_hosts() const;
    /// True once a final RoundEnd was issued and every member other than `self` has left.
    bool drained(const std::string& self) const;
    /// The host names of the last round's members other than `self` that have not left (their
    /// agents, and so maybe their workers, still run), in group-rank order; final end or not.
    std::vector<std::string> not_left(const std::string& self) const;
    bool finished() const { return finished_; }
    /// True when node `id` is a member of round `round`, the latest one closed: the only nodes
    /// whose reports (timelines, statuses) count, whatever else reaches the queue.
    bool reports_for(int round, const std::string& id) const {
        return running_.round == round && rank_of(id) >= 0;
    }

    /// Every node the state names: the running round's members and the joined or waiting ones.
    std::vector<std::string> known_nodes() const;
    /// What another coordinator needs to carry on where this one stopped (JSON; no times):
    /// the phase, round, restart count, the running round, the joined and waiting nodes.
    std::string save() const;
    /// Takes over the state `save()` wrote, at `now`: every member's silence and a last call are
    /// counted from `now`. Throws std::runtime_error on a malformed state (it came from etcd).
    void restore(const std::string& text, SteadyTime now);

  private:
    enum class Phase { Joining, Running, Finished };
    void close(SteadyTime now, std::vector<CoordinatorCommand>& out);
    /// While a round forms: closes it when it can (every survivor back, or MAX joined), else
    /// opens the last call once MIN have joined.
    void settle(SteadyTime now, std::vector<CoordinatorCommand>& out);
    /// Ends the running round at `now`; `lost_id` (if any) is the member not expected back.
    void end_round(RoundEnd end, SteadyTime now, std::vector<CoordinatorCommand>& out,
                   const std::string& lost_id = {});
    /// While a round forms: drops the last round's members silent for lost_after, noting why.
    void drop_silent_expected(const std::map<std::string, std::int64_t>& counters, SteadyTime now);
    /// Drops the waiting nodes (spares, joiners) silent for lost_after: a dead spare is never
    /// promoted. Each is told (a rejected join) in case it lives after all.
    void drop_silent_waiting(const std::map<std::string, std::int64_t>& counters, SteadyTime now,
                             std::vector<CoordinatorCommand>& out);
    /// --restart-policy failed: puts a live spare with the same worker count in lost member
    /// `lost`'s place in the running round (a restart used); false when none can take it (no
    /// such spare, restarts exhausted, or the lost member held the round's workers' store).
    bool replace_lost(NodeInfo lost, const std::string& why, SteadyTime now,
                      std::vector<CoordinatorCommand>& out);
    /// True when a node whose counter last changed at `changed` has been silent too long:
    /// lost_after counted from `changed`, or from when the store answered again after a stall.
    bool too_silent(SteadyTime changed, SteadyTime now) const {
        return now - std::max(changed, store_back_) > policy_.lost_after;
    }
    /// How long a node whose counter last changed at `changed` has been silent, as "1.6 s", and
    /// when the store stalled since, how much of it came after the store answered again.
    std::string silence_text(SteadyTime changed, SteadyTime now) const;
    /// Reads `id`'s counter from `counters` into beats_; true when it changed.
    bool note_beat(const std::string& id, const std::map<std::string, std::int64_t>& counters,
                   SteadyTime now);
    /// Why member `id` of the last round is not in the next one: `lost` (silent for lost_after)
    /// or it did not rejoin before the round closed; when its heartbeats stopped before the last
    /// round ended (or were last seen within one heartbeat after it), a failure that ended it
    /// likely followed the node's loss, and the note says so.
    std::string absence_note(const std::string& id, SteadyTime now, bool lost) const;
    /// True when every survivor of the last round has rejoined and MIN is met.
    bool all_expected_back() const;
    void join(const JoinEvent& e, SteadyTime now, std::vector<CoordinatorCommand>& out);
    bool is_member(const std::string& id) const;
    /// Node `id`'s group rank in running_, or -1 (running_.group_rank_of, in O(1)).
    int rank_of(const std::string& id) const;
    /// Makes `round` the running (or last) round.
    void set_running(RoundAssignment round);

    CoordinatorPolicy policy_;
    Phase phase_ = Phase::Joining;
    int round_ = 0;
    int restart_count_ = 0;
    JoinQueue pending_;        ///< joined for the round being formed (or waiting), in order
    RoundAssignment running_;  ///< set through set_running()
    std::unordered_map<std::string, int> running_rank_;  ///< running_'s node ids -> group ranks
    std::set<std::string> succeeded_;
    std::set<std::string> left_;
    std::map<std::string, std::pair<std::int64_t, SteadyTime>>
        beats_;  ///< last count, when it changed
    /// Members of the running round that were not in the one before (a promoted spare, a
    /// newcomer), and the members whose counter advanced in this round: a newcomer silent
    /// from the start never showed, and the round re-forms without it, not counting a restart.
    std::set<std::string> newcomers_;
    std::set<std::string> showed_;
    std::optional<SteadyTime> last_call_end_;
    SteadyTime store_back_{};         ///< when the store last answered again after a stall
    std::set<std::string> expected_;  ///< survivors of the last round, until they are all back
    /// How the last round ended, and when: what a node lost since then is set against.
    struct LastEnd {
        int round = 0;
        RoundEnd end;
        SteadyTime at;
    };
    std::optional<LastEnd> last_end_;
    std::vector<std::string> lost_notes_;  ///< for the next round's assignment
    bool finished_ = false;
};

}  // namespace ptrun::launcher
