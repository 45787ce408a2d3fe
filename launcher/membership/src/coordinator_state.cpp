// CoordinatorCore::save/restore: the coordinator's state as JSON, for the etcd backend, where the
// coordinator role moves to another node when its holder dies.
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ptrun/launcher/membership/coordinator_core.hpp"

namespace ptrun::launcher {
namespace {

using nlohmann::json;

constexpr const char* kPhases[] = {"joining", "running", "finished"};

/// A JSON integer in [lo, hi] (the text came from etcd), else std::runtime_error naming `what`.
int bounded_int(const json& j, const char* what, int lo = 0,
                int hi = std::numeric_limits<int>::max()) {
    if (!j.is_number_integer()) throw std::runtime_error(std::string("state lacks '") + what + "'");
    const auto v = j.get<std::int64_t>();
    if (v < lo || v > hi)
        throw std::runtime_error(std::string("state has '") + what + "' out of range");
    return static_cast<int>(v);
}

json strings(const std::set<std::string>& s) {
    return json(std::vector<std::string>(s.begin(), s.end()));
}

std::set<std::string> string_set(const json& j, const char* what) {
    if (!j.is_array()) throw std::runtime_error(std::string("state lacks '") + what + "'");
    std::set<std::string> out;
    for (const auto& e : j) {
        if (!e.is_string())
            throw std::runtime_error(std::string("state has a malformed '") + what + "'");
        out.insert(e.get<std::string>());
    }
    return out;
}

std::vector<std::string> string_list(const json& j, const char* what) {
    if (!j.is_array()) throw std::runtime_error(std::string("state lacks '") + what + "'");
    std::vector<std::string> out;
    for (const auto& e : j) {
        if (!e.is_string())
            throw std::runtime_error(std::string("state has a malformed '") + what + "'");
        out.push_back(e.get<std::string>());
    }
    return out;
}

json node_list(const std::vector<NodeInfo>& nodes) {
    json out = json::array();
    for (const auto& n : nodes) out.push_back(json::parse(encode(n)));
    return out;
}

std::vector<NodeInfo> nodes_from(const json& j) {
    if (!j.is_array()) throw std::runtime_error("state lacks 'members'");
    std::vector<NodeInfo> out;
    for (const auto& n : j) out.push_back(decode_node(n.dump()));
    return out;
}

}  // namespace

std::vector<std::string> CoordinatorCore::known_nodes() const {
    std::set<std::string> ids;
    for (const auto& m : running_.members) ids.insert(m.id);
    for (const auto& p : pending_) ids.insert(p.node.id);
    ids.insert(expected_.begin(), expected_.end());
    return {ids.begin(), ids.end()};
}

std::string CoordinatorCore::save() const {
    json pending = json::array();
    for (const auto& p : pending_)
        pending.push_back({{"node", json::parse(encode(p.node))}, {"seq", p.seq}});
    return json{{"phase", kPhases[static_cast<int>(phase_)]},
                {"round", round_},
                {"restart_count", restart_count_},
                {"pending", std::move(pending)},
                {"running",
                 {{"round", running_.round},
                  {"restart_count", running_.restart_count},
                  {"members", node_list(running_.members)},
                  {"master_addr", running_.master_addr},
                  {"master_port", running_.master_port},
                  {"notes", running_.notes}}},
                {"succeeded", strings(succeeded_)},
                {"left", strings(left_)},
                {"expected", strings(expected_)},
                {"lost_notes", lost_notes_},
                {"finished", finished_}}
        .dump();
}

void CoordinatorCore::restore(const std::string& text, SteadyTime now) {
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error("malformed coordinator state");
    const std::string phase = j.value("phase", "");
    int p = 0;
    while (p < 3 && phase != kPhases[p]) ++p;
    if (p == 3) throw std::runtime_error("coordinator state has an unknown phase '" + phase + "'");
    const int round = bounded_int(j.value("round", json()), "round");
    const int restarts = bounded_int(j.value("restart_count", json()), "restart_count");
    std::vector<JoinEvent> pending;
    for (const auto& e : j.value("pending", json::array())) {
        if (!e.is_object() || !e.contains("node"))
            throw std::runtime_error("state has a malformed 'pending'");
        pending.push_back(
            JoinEvent{decode_node(e["node"].dump()), bounded_int(e.value("seq", json()), "seq")});
    }
    const auto& r = j.value("running", json::object());
    RoundAssignment running;
    running.round = bounded_int(r.value("round", json()), "running.round");
    running.restart_count = bounded_int(r.value("restart_count", json()), "running.restart_count");
    running.members = nodes_from(r.value("members", json()));
    const auto addr = r.value("master_addr", json());
    if (!addr.is_string()) throw std::runtime_error("state lacks 'master_addr'");
    running.master_addr = addr.get<std::string>();
    running.master_port = static_cast<std::uint16_t>(
        bounded_int(r.value("master_port", json()), "master_port", 0, 65535));
    running.notes = string_list(r.value("notes", json()), "notes");
    auto succeeded = string_set(j.value("succeeded", json()), "succeeded");
    auto left = string_set(j.value("left", json()), "left");
    auto expected = string_set(j.value("expected", json()), "expected");
    auto lost_notes = string_list(j.value("lost_notes", json()), "lost_notes");
    const auto finished = j.value("finished", json());
    if (!finished.is_boolean()) throw std::runtime_error("state lacks 'finished'");

    phase_ = static_cast<Phase>(p);
    round_ = round;
    restart_count_ = restarts;
    pending_.assign(std::move(pending));
    set_running(std::move(running));
    succeeded_ = std::move(succeeded);
    left_ = std::move(left);
    expected_ = std::move(expected);
    lost_notes_ = std::move(lost_notes);
    finished_ = finished.get<bool>();
    last_end_.reset();
    last_call_end_.reset();
    beats_.clear();
    // Silence is counted from the takeover: the counters read before it were another node's.
    for (const auto& m : running_.members) beats_[m.id] = {-1, now};
    for (const auto& waiting : pending_) beats_.try_emplace(waiting.node.id, -1, now);
    newcomers_.clear();  // after a takeover a silent member is lost, as any
    showed_.clear();
    if (phase_ == Phase::Joining && static_cast<int>(pending_.size()) >= policy_.min_nodes &&
        !all_expected_back())
        last_call_end_ = now + policy_.last_call;
}

}  // namespace ptrun::launcher
