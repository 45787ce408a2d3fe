#include "ptrun/launcher/membership/coordinator_core.hpp"

#include <utility>
#include <algorithm>

#include "ptrun/launcher/membership/admission.hpp"
#include "ptrun/launcher/output/duration_text.hpp"

namespace ptrun::launcher {

CoordinatorCore::CoordinatorCore(CoordinatorPolicy policy) : policy_(std::move(policy)) {}

bool CoordinatorCore::is_member(const std::string& id) const {
    return phase_ != Phase::Joining && rank_of(id) >= 0;
}

int CoordinatorCore::rank_of(const std::string& id) const {
    auto it = running_rank_.find(id);
    return it == running_rank_.end() ? -1 : it->second;
}

void CoordinatorCore::set_running(RoundAssignment round) {
    running_ = std::move(round);
    running_rank_.clear();
    running_rank_.reserve(running_.members.size());
    for (std::size_t g = 0; g < running_.members.size(); ++g)
        running_rank_.emplace(running_.members[g].id, static_cast<int>(g));
}

std::vector<std::string> CoordinatorCore::watched_members() const {
    std::vector<std::string> ids;
    if (phase_ == Phase::Running) {
        for (const auto& m : running_.members) ids.push_back(m.id);
    } else if (phase_ == Phase::Joining) {
        for (const auto& id : expected_) {
            if (!pending_.contains(id)) ids.push_back(id);
        }
    }
    return ids;
}

std::vector<std::string> CoordinatorCore::beating_nodes() const {
    auto ids = watched_members();
    if (phase_ == Phase::Finished) return ids;
    // The watched members are the running round's or those not in pending_: no one twice.
    for (const auto& p : pending_) {
        if (phase_ != Phase::Running || rank_of(p.node.id) < 0) ids.push_back(p.node.id);
    }
    return ids;
}

bool CoordinatorCore::drained(const std::string& self) const {
    return finished_ && not_left(self).empty();
}

std::vector<std::string> CoordinatorCore::not_left(const std::string& self) const {
    std::vector<std::string> hosts;
    for (const auto& m : running_.members) {
        if (m.id != self && !left_.count(m.id)) hosts.push_back(m.hostname);
    }
    return hosts;
}

void CoordinatorCore::join(const JoinEvent& e, SteadyTime now,
                           std::vector<CoordinatorCommand>& out) {
    if (e.node.max_restarts != policy_.max_restarts) {
        out.push_back(RejectJoin{e.node.id, e.seq,
                                 "--max-restarts " + std::to_string(e.node.max_restarts) + " on " +
                                     e.node.hostname + " differs from the store host's " +
                                     std::to_string(policy_.max_restarts) +
                                     ": expected the same value on every node"});
        return;
    }
    if (e.node.replace_failed != policy_.replace_failed) {
        const auto policy = [](bool failed) { return failed ? "failed" : "group"; };
        out.push_back(RejectJoin{e.node.id, e.seq,
                                 std::string("--restart-policy ") + policy(e.node.replace_failed) +
                                     " on " + e.node.hostname + " differs from the store host's " +
                                     policy(policy_.replace_failed) +
                                     ": expected the same value on every node"});
        return;
    }
    // A node joining again keeps its place among the spares (its join seq is the new one).
    pending_.put(e);
    beats_.try_emplace(e.node.id, -1, now);  // a waiting node's silence counts from its join
    if (phase_ == Phase::Running) {
        // A node waiting while the job runs: admit it at the next round if there is room, else
        // it waits as a spare.
        if (is_member(e.node.id)) return;
        if (static_cast<int>(running_.members.size()) < policy_.max_nodes) {
            end_round(RoundEnd{.reason = EndReason::ScaleUp,
                               .exit_code = 0,
                               .host = e.node.hostname,
                               .message = "node " + e.node.hostname +
                                          " joined; re-forming the group with it"},
                      now, out);
        } else {
            out.push_back(MarkSpares{round_, {{e.node.id, e.seq}}});
        }
        return;
    }
    out.push_back(PublishStatus{static_cast<int>(pending_.size())});
    settle(now, out);
}

void CoordinatorCore::settle(SteadyTime now, std::vector<CoordinatorCommand>& out) {
    const int joined = static_cast<int>(pending_.size());
    // A round re-forming waits for the last one's survivors until it is full: with MAX nodes
    // joined it closes at once (a member killed with -9 never comes back; close() takes the
    // survivors back by then first, and one coming later waits as a spare).
    if (all_expected_back() || joined >= policy_.max_nodes) {
        close(now, out);
    } else if (joined >= policy_.min_nodes && !last_call_end_) {
        last_call_end_ = now + policy_.last_call;
    }
}

bool CoordinatorCore::all_expected_back() const {
    if (expected_.empty() || static_cast<int>(pending_.size()) < policy_.min_nodes) return false;
    // Early out at the first one missing: over a whole re-form about N log N lookups.
    return std::all_of(expected_.begin(), expected_.end(),
                       [&](const std::string& id) { return pending_.contains(id); });
}

void CoordinatorCore::close(SteadyTime now, std::vector<CoordinatorCommand>& out) {
    last_call_end_.reset();
    for (const auto& id : watched_members()) lost_notes_.push_back(absence_note(id, now, false));
    expected_.clear();
    // The last round's members first, then the others in the order they joined.
    const std::vector<JoinEvent> admitted =
        pending_.take(static_cast<std::size_t>(policy_.max_nodes),
                      [&](const JoinEvent& p) { return rank_of(p.node.id) >= 0; });

    RoundAssignment a;
    a.round = round_;
    a.restart_count = restart_count_;
    a.master_addr = policy_.master_addr;
    a.master_port = policy_.master_port;
    a.notes = std::move(lost_notes_);
    lost_notes_.clear();
    for (const auto& j : admitted) a.members.push_back(j.node);
    if (auto error = order_members(a.members); !error.empty()) {
        for (const auto& j : admitted) out.push_back(RejectJoin{j.node.id, j.seq, error});
        phase_ = Phase::Finished;
        finished_ = true;
        return;
    }
    if (a.master_addr.empty()) {  // the workers' store moves with the round's group rank 0
        a.master_addr = a.members.front().addr;
        a.master_port = a.members.front().store_port;
    }
    PublishRound publish{a, {}};
    for (const auto& j : admitted) publish.admitted.emplace_back(j.node.id, j.seq);
    out.push_back(std::move(publish));
    newcomers_.clear();
    for (const auto& m : a.members) {  // the first round has no newcomers: every node is new
        if (!running_.members.empty() && rank_of(m.id) < 0) newcomers_.insert(m.id);
    }
    showed_.clear();
    set_running(std::move(a));
    phase_ = Phase::Running;
    succeeded_.clear();
    left_.clear();
    std::map<std::string, std::pair<std::int64_t, SteadyTime>> spare_beats;
    for (const auto& p : pending_) {  // the spares' silence goes on counting
        if (auto b = beats_.find(p.node.id); b != beats_.end()) spare_beats.insert(*b);
    }
    beats_ = std::move(spare_beats);
    for (const auto& m : running_.members) beats_[m.id] = {-1, now};
    // Nodes beyond MAX keep waiting as spares; they trigger nothing until a member is lost.
    if (!pending_.empty()) {
        MarkSpares spares{round_, {}};
        for (const auto& p : pending_) spares.spares.emplace_back(p.node.id, p.seq);
        out.push_back(std::move(spares));
    }
}

std::vector<std::string> CoordinatorCore::spares() const {
    std::vector<std::string> ids;
    if (phase_ != Phase::Running) return ids;
    for (const auto& p : pending_) ids.push_back(p.node.id);
    return ids;
}

std::vector<std::string> CoordinatorCore::spare_hosts() const {
    std::vector<std::string> hosts;
    if (phase_ != Phase::Running) return hosts;
    for (const auto& p : pending_) hosts.push_back(p.node.hostname);
    return hosts;
}

void CoordinatorCore::end_round(RoundEnd end, SteadyTime now, std::vector<CoordinatorCommand>& out,
                                const std::string& lost_id) {
    last_end_ = LastEnd{round_, end, now};
    const bool failure = end.reason == EndReason::Failure || end.reason == EndReason::NodeLost;
    if (failure && restart_count_ >= policy_.max_restarts) {
        end.final = true;
        end.message += " (restarts exhausted: " + std::to_string(restart_count_) + " of " +
                       std::to_string(policy_.max_restarts) + ")";
    }
    if (end.reason == EndReason::Complete || end.reason == EndReason::Error ||
        end.reason == EndReason::Checkpoint)
        end.final = true;
    const bool final = end.final;
    out.emplace_back(std::in_place_type<EndRound>, round_, std::move(end));
    if (final) {
        phase_ = Phase::Finished;
        finished_ = true;
        for (const auto& p : pending_.take_all())
            out.push_back(RejectJoin{p.node.id, p.seq, kJobEnded});  // spares go
        return;
    }
    if (failure) restart_count_ += 1;
    round_ += 1;
    // The survivors re-form without a last call once every one of them is back (and MIN is met).
    expected_.clear();
    for (const auto& m : running_.members) {
        if (m.id != lost_id) expected_.insert(m.id);
    }
    phase_ = Phase::Joining;                  // waiting nodes stay in pending_; the members rejoin
    if (expected_.empty()) settle(now, out);  // no survivor: the spares alone may form it
}

std::vector<CoordinatorCommand> CoordinatorCore::on_event(const RdzvEvent& event, SteadyTime now) {
    std::vector<CoordinatorCommand> out;
    if (finished_) {
        if (auto* l = std::get_if<LeavingEvent>(&event)) left_.insert(l->id);
        if (auto* j = std::get_if<JoinEvent>(&event)) {
            out.push_back(RejectJoin{j->node.id, j->seq, kJobEnded});
        }
        return out;
    }
    if (auto* j = std::get_if<JoinEvent>(&event)) {
        join(*j, now, out);
    } else if (auto* f = std::get_if<FailedEvent>(&event)) {
        if (phase_ == Phase::Running && f->round == round_ && is_member(f->id))
            end_round(f->end, now, out);
    } else if (auto* s = std::get_if<SucceededEvent>(&event)) {
        if (phase_ == Phase::Running && s->round == round_ && is_member(s->id)) {
            succeeded_.insert(s->id);
            if (succeeded_.size() == running_.members.size()) {
                end_round(RoundEnd{.reason = EndReason::Complete,
                                   .final = true,
                                   .exit_code = 0,
                                   .message = "every worker succeeded"},
                          now, out);
            }
        }
    } else if (auto* l = std::get_if<LeavingEvent>(&event)) {
        pending_.erase(l->id);
        const bool was_expected = expected_.erase(l->id) > 0;
        if (phase_ == Phase::Joining &&
            (all_expected_back() || (was_expected && expected_.empty())))
            settle(now, out);
        if (phase_ == Phase::Running && is_member(l->id) && !succeeded_.count(l->id)) {
            const auto& m = running_.members[static_cast<std::size_t>(rank_of(l->id))];
            if (l->checkpointed) {
                // A preemption: every node checkpoints and the job ends, nothing is replaced.
                end_round(RoundEnd{.reason = EndReason::Checkpoint,
                                   .exit_code = l->exit_code,
                                   .host = m.hostname,
                                   .message = "the workers on " + m.hostname +
                                              " exited on the checkpoint signal (" + l->why +
                                              "); every node checkpoints and the job ends"},
                          now, out, m.id);
            } else if (const std::string why = "the agent on " + m.hostname + " left: " + l->why;
                       !replace_lost(m, why, now, out)) {
                end_round(
                    RoundEnd{.reason = EndReason::NodeLost, .host = m.hostname, .message = why},
                    now, out, m.id);
            }
        }
        left_.insert(l->id);
    }
    return out;
}

std::vector<CoordinatorCommand> CoordinatorCore::on_beats(
    const std::map<std::string, std::int64_t>& counters, SteadyTime now) {
    std::vector<CoordinatorCommand> out;
    if (phase_ == Phase::Finished) return out;
    drop_silent_waiting(counters, now, out);
    if (phase_ == Phase::Joining) {
        const bool waited = !expected_.empty();
        drop_silent_expected(counters, now);
        if (all_expected_back() || (waited && expected_.empty())) settle(now, out);
        return out;
    }
    for (const auto& m : running_.members) {
        const bool was_read = beats_[m.id].first >= 0;
        if (note_beat(m.id, counters, now)) {
            if (was_read) showed_.insert(m.id);
            continue;
        }
        const auto changed = beats_[m.id].second;
        if (!too_silent(changed, now) || succeeded_.count(m.id)) continue;
        const auto silent = silence_text(changed, now);
        if (newcomers_.count(m.id) && !showed_.count(m.id)) {
            // Taken in while it was already gone (a spare that died since its last beat): it
            // never ran a worker, so this is no failure and costs no restart.
            end_round(RoundEnd{.reason = EndReason::Regroup,
                               .exit_code = 0,
                               .host = m.hostname,
                               .message = "node " + m.hostname + ", new in round " +
                                          std::to_string(round_) + ", never showed (no " +
                                          "heartbeat for " + silent + "); re-forming without it"},
                      now, out, m.id);
        } else {
            const std::string why = "node " + m.hostname + " sent no heartbeat for " + silent;
            if (!replace_lost(m, why, now, out)) {  // it takes a copy: false leaves m as it was
                end_round(
                    RoundEnd{.reason = EndReason::NodeLost, .host = m.hostname, .message = why},
                    now, out, m.id);
            }
        }
        return out;
    }
    return out;
}

bool CoordinatorCore::replace_lost(NodeInfo lost, const std::string& why, SteadyTime now,
                                   std::vector<CoordinatorCommand>& out) {
    const int g = rank_of(lost.id);
    if (!policy_.replace_failed || g < 0 || restart_count_ >= policy_.max_restarts) return false;
    // The round's workers' store is the lost node's own (etcd and file backends): it is gone.
    if (policy_.master_addr.empty() && g == 0) return false;
    // A member whose workers all succeeded has none left to join the spare's generation.
    if (!succeeded_.empty()) return false;
    auto spare = std::find_if(pending_.begin(), pending_.end(), [&](const JoinEvent& p) {
        return p.node.nproc == lost.nproc && (p.node.node_rank < 0 || p.node.node_rank == g);
    });
    if (spare == pending_.end()) return false;
    const JoinEvent taken = pending_.take_at(spare);
    RoundAssignment replaced = running_;
    replaced.members[static_cast<std::size_t>(g)] = taken.node;
    set_running(std::move(replaced));
    restart_count_ += 1;
    beats_.erase(lost.id);
    beats_[taken.node.id] = {-1, now};
    newcomers_.insert(taken.node.id);  // silent from the start: the round re-forms without it
    showed_.erase(taken.node.id);
    out.push_back(
        ReplaceMember{running_, g, {taken.node.id, taken.seq}, lost.id, lost.hostname, why});
    return true;
}

void CoordinatorCore::on_store_answer(SteadyTime asked, std::chrono::milliseconds bound,
                                      SteadyTime answered) {
    if (answered - asked > bound + policy_.heartbeat / 4) on_store_back(answered);
}

void CoordinatorCore::on_store_back(SteadyTime answered) {
    store_back_ = std::max(store_back_, answered);
}

std::string CoordinatorCore::silence_text(SteadyTime changed, SteadyTime now) const {
    using std::chrono::duration_cast;
    using std::chrono::milliseconds;
    std::string text = seconds_text(duration_cast<milliseconds>(now - changed));
    if (store_back_ > changed && store_back_ < now) {
        text += ", " + seconds_text(duration_cast<milliseconds>(now - store_back_)) +
                " of it after the rendezvous store answered again";
    }
    return text;
}

bool CoordinatorCore::note_beat(const std::string& id,
                                const std::map<std::string, std::int64_t>& counters,
                                SteadyTime now) {
    auto& [count, changed] = beats_[id];
    auto it = counters.find(id);
    if (it == counters.end() || it->second == count) return false;
    count = it->second;
    changed = now;
    return true;
}

void CoordinatorCore::drop_silent_waiting(const std::map<std::string, std::int64_t>& counters,
                                          SteadyTime now, std::vector<CoordinatorCommand>& out) {
    pending_.erase_if([&](const JoinEvent& p) {
        const bool awaited =
            expected_.count(p.node.id) > 0;  // a survivor back: drop_silent_expected
        if (note_beat(p.node.id, counters, now) || awaited ||
            !too_silent(beats_[p.node.id].second, now)) {
            return false;
        }
        const auto silent = silence_text(beats_[p.node.id].second, now);
        out.push_back(RejectJoin{p.node.id, p.seq,
                                 "node " + p.node.hostname + " sent no heartbeat for " + silent +
                                     " while it waited: dropped from the rendezvous"});
        beats_.erase(p.node.id);
        return true;
    });
}

void CoordinatorCore::drop_silent_expected(const std::map<std::string, std::int64_t>& counters,
                                           SteadyTime now) {
    for (const auto& id : watched_members()) {
        auto beat = beats_.find(id);
        if (beat == beats_.end()) continue;
        auto& [count, changed] = beat->second;
        if (auto it = counters.find(id); it != counters.end() && it->second != count) {
            count = it->second;
            changed = now;
            continue;
        }
        if (!too_silent(changed, now)) continue;
        lost_notes_.push_back(absence_note(id, now, true));
        expected_.erase(id);
    }
}

std::string CoordinatorCore::absence_note(const std::string& id, SteadyTime now, bool lost) const {
    using std::chrono::duration_cast;
    using std::chrono::milliseconds;
    const auto g = rank_of(id);
    const std::string host =
        g >= 0 ? running_.members[static_cast<std::size_t>(g)].hostname : std::string(id);
    auto beat = beats_.find(id);
    if (beat == beats_.end()) return "node " + host + " did not rejoin";
    const auto last_beat = beat->second.second;
    const auto silent = silence_text(last_beat, now);
    std::string note = lost ? "node " + host + " is lost: no heartbeat for " + silent
                            : "node " + host +
                                  " did not rejoin before the round closed (last "
                                  "heartbeat " +
                                  silent + " ago)";
    // A change is seen at the read after the beat: up to one heartbeat late. Seen within one
    // interval after the round's end, the node may well have died before it.
    if (!last_end_ || last_beat > last_end_->at + policy_.heartbeat) return note;
    const std::string round = "round " + std::to_string(last_end_->round);
    note += last_beat < last_end_->at
                ? "; its heartbeats stopped " +
                      seconds_text(duration_cast<milliseconds>(last_end_->at - last_beat)) +
                      " before " + round + " ended"
                : "; its heartbeats stopped as " + round + " ended";
    if (last_end_->end.reason == EndReason::Failure) {
        note +=
            " (" + last_end_->end.message + "): that failure likely followed the loss of " + host;
    }
    return note;
}

std::vector<CoordinatorCommand> CoordinatorCore::on_gone(const std::string& id,
                                                         const std::string& why, SteadyTime now) {
    std::vector<CoordinatorCommand> out;
    pending_.erase(id);
    if (phase_ == Phase::Running && is_member(id) && !succeeded_.count(id)) {
        const auto& m = running_.members[static_cast<std::size_t>(rank_of(id))];
        end_round(RoundEnd{.reason = EndReason::NodeLost,
                           .host = m.hostname,
                           .message = "node " + m.hostname + " is lost: " + why},
                  now, out, m.id);
    } else if (phase_ == Phase::Joining && expected_.erase(id) > 0) {
        const auto g = rank_of(id);
        const std::string host =
            g >= 0 ? running_.members[static_cast<std::size_t>(g)].hostname : id;
        lost_notes_.push_back("node " + host + " is lost: " + why);
        settle(now, out);
    }
    return out;
}

std::vector<CoordinatorCommand> CoordinatorCore::on_tick(SteadyTime now) {
    std::vector<CoordinatorCommand> out;
    if (phase_ == Phase::Joining && last_call_end_ && now >= *last_call_end_ &&
        static_cast<int>(pending_.size()) >= policy_.min_nodes) {
        close(now, out);
    }
    return out;
}

}  // namespace ptrun::launcher
