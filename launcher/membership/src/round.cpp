#include "ptrun/launcher/membership/round.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

#include "ptrun/sys/json_integer.hpp"

namespace ptrun::launcher {
namespace {

using nlohmann::json;

json node_json(const NodeInfo& n) {
    return json{{"id", n.id},
                {"hostname", n.hostname},
                {"addr", n.addr},
                {"nproc", n.nproc},
                {"node_rank", n.node_rank},
                {"store_host", n.is_store_host},
                {"max_restarts", n.max_restarts},
                {"replace_failed", n.replace_failed},
                {"store_port", n.store_port}};
}

json parse(const std::string& text, const char* what) {
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        throw std::runtime_error(std::string("malformed ") + what + " record");
    return j;
}

template <typename T>
T field(const json& j, const char* key, const char* what) {
    auto it = j.find(key);
    if (it == j.end()) throw std::runtime_error(std::string(what) + " record lacks '" + key + "'");
    try {
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            return sys::json_integer<T>(*it);  // 1e30 is no int
        } else {
            return it->get<T>();
        }
    } catch (const std::exception&) {  // json's, and json_integer's out_of_range
        throw std::runtime_error(std::string(what) + " record has a malformed '" + key + "'");
    }
}

NodeInfo node_from(const json& j) {
    NodeInfo n;
    n.id = field<std::string>(j, "id", "node");
    n.hostname = field<std::string>(j, "hostname", "node");
    n.addr = field<std::string>(j, "addr", "node");
    n.nproc = field<int>(j, "nproc", "node");
    n.node_rank = field<int>(j, "node_rank", "node");
    n.is_store_host = field<bool>(j, "store_host", "node");
    n.max_restarts = field<int>(j, "max_restarts", "node");
    // Absent from an older agent's record: it knows only --restart-policy group.
    if (j.contains("replace_failed")) n.replace_failed = field<bool>(j, "replace_failed", "node");
    if (n.nproc < 1 || n.nproc > 4096)
        throw std::runtime_error("node record has nproc out of range");
    if (j.contains("store_port")) {
        const auto& port = j["store_port"];
        if (!port.is_number_unsigned() || port.get<std::uint64_t>() > 65535)
            throw std::runtime_error("node record has a malformed 'store_port'");
        n.store_port = static_cast<std::uint16_t>(port.get<std::uint64_t>());
    }
    return n;
}

constexpr std::pair<EndReason, const char*> kReasons[] = {
    {EndReason::Failure, "failure"},      {EndReason::NodeLost, "node-lost"},
    {EndReason::ScaleUp, "scale-up"},     {EndReason::Regroup, "regroup"},
    {EndReason::Complete, "complete"},    {EndReason::Error, "error"},
    {EndReason::Checkpoint, "checkpoint"}};

}  // namespace

int RoundAssignment::group_rank_of(const std::string& id) const {
    for (std::size_t i = 0; i < members.size(); ++i) {
        if (members[i].id == id) return static_cast<int>(i);
    }
    return -1;
}

int RoundAssignment::rank_base(int group_rank) const {
    int base = 0;
    for (int i = 0; i < group_rank; ++i) base += members[static_cast<std::size_t>(i)].nproc;
    return base;
}

int RoundAssignment::world_size() const { return rank_base(static_cast<int>(members.size())); }

std::string to_text(EndReason reason) {
    for (auto [r, text] : kReasons) {
        if (r == reason) return text;
    }
    return "unknown";
}

std::string encode(const NodeInfo& node) { return node_json(node).dump(); }

std::string encode(const RoundEnd& e) {
    return json{{"reason", to_text(e.reason)},
                {"final", e.final},
                {"exit_code", e.exit_code},
                {"host", e.host},
                {"rank", e.rank},
                {"message", e.message}}
        .dump();
}

NodeInfo decode_node(const std::string& text) { return node_from(parse(text, "node")); }

RoundEnd decode_end(const std::string& text) {
    auto j = parse(text, "round end");
    RoundEnd e;
    auto reason = field<std::string>(j, "reason", "round end");
    auto it = std::find_if(std::begin(kReasons), std::end(kReasons),
                           [&](auto p) { return reason == p.second; });
    if (it == std::end(kReasons))
        throw std::runtime_error("round end record has an unknown reason '" + reason + "'");
    e.reason = it->first;
    e.final = field<bool>(j, "final", "round end");
    e.exit_code = field<int>(j, "exit_code", "round end");
    e.host = field<std::string>(j, "host", "round end");
    e.rank = field<int>(j, "rank", "round end");
    e.message = field<std::string>(j, "message", "round end");
    return e;
}

std::string order_members(std::vector<NodeInfo>& joined) {
    const int n = static_cast<int>(joined.size());
    std::vector<std::optional<NodeInfo>> slots(joined.size());
    std::vector<NodeInfo> free;
    for (auto& node : joined) {
        if (node.node_rank < 0) {
            free.push_back(node);
            continue;
        }
        if (node.node_rank >= n) {
            return "--node-rank " + std::to_string(node.node_rank) + " on " + node.hostname +
                   ": the round closed with " + std::to_string(n) +
                   " node(s), so node ranks must be below " + std::to_string(n);
        }
        auto& slot = slots[static_cast<std::size_t>(node.node_rank)];
        if (slot) {
            return "--node-rank " + std::to_string(node.node_rank) + " given on both " +
                   slot->hostname + " and " + node.hostname + ": expected distinct node ranks";
        }
        slot = node;
    }
    std::sort(free.begin(), free.end(), [](const NodeInfo& a, const NodeInfo& b) {
        return std::tuple(!a.is_store_host, a.hostname, a.id) <
               std::tuple(!b.is_store_host, b.hostname, b.id);
    });
    auto next = free.begin();
    joined.clear();
    for (auto& slot : slots) joined.push_back(slot ? *slot : *next++);
    return {};
}

}  // namespace ptrun::launcher
