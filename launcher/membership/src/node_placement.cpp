#include "ptrun/launcher/membership/node_placement.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ptrun/sys/json_integer.hpp"

namespace ptrun::launcher {

using nlohmann::json;

namespace {

/// The assignment's notes within the placement's bounds.
std::vector<std::string> bounded_notes(const std::vector<std::string>& notes) {
    std::vector<std::string> out;
    for (const auto& note : notes) {
        if (out.size() + 1 == kMaxPlacementNotes && notes.size() > kMaxPlacementNotes) {
            out.push_back("and " + std::to_string(notes.size() - out.size()) +
                          " more node(s) of the last round are not in this one");
            break;
        }
        out.push_back(note.substr(0, kMaxPlacementNote));
    }
    return out;
}

}  // namespace

std::vector<NodePlacement> placements(const RoundAssignment& a) {
    const auto notes = bounded_notes(a.notes);
    std::vector<NodePlacement> out;
    out.reserve(a.members.size());
    const int nodes = static_cast<int>(a.members.size());
    const int world = a.world_size();
    int base = 0;
    for (int g = 0; g < nodes; ++g) {
        out.push_back(NodePlacement{a.round,
                                    a.restart_count,
                                    g,
                                    nodes,
                                    base,
                                    world,
                                    a.master_addr,
                                    a.master_port,
                                    {},
                                    notes});
        base += a.members[static_cast<std::size_t>(g)].nproc;
    }
    return out;
}

std::string encode(const NodePlacement& p) {
    return json{{"round", p.round},
                {"restart_count", p.restart_count},
                {"group_rank", p.group_rank},
                {"nodes", p.nodes},
                {"rank_base", p.rank_base},
                {"world_size", p.world_size},
                {"master_addr", p.master_addr},
                {"master_port", p.master_port},
                {"token", p.token},
                {"notes", p.notes},
                {"replacement", p.replacement}}
        .dump();
}

NodePlacement decode_placement(const std::string& text) {
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error("malformed placement record");
    try {
        NodePlacement p{sys::json_integer<int>(j.at("round")),
                        sys::json_integer<int>(j.at("restart_count")),
                        sys::json_integer<int>(j.at("group_rank")),
                        sys::json_integer<int>(j.at("nodes")),
                        sys::json_integer<int>(j.at("rank_base")),
                        sys::json_integer<int>(j.at("world_size")),
                        j.at("master_addr").get<std::string>(),
                        sys::json_integer<std::uint16_t>(j.at("master_port")),
                        j.value("token", std::string()),
                        j.value("notes", std::vector<std::string>()),
                        j.value("replacement", false)};
        if (p.notes.size() > kMaxPlacementNotes ||
            std::any_of(p.notes.begin(), p.notes.end(),
                        [](const std::string& n) { return n.size() > kMaxPlacementNote; })) {
            throw std::runtime_error("placement record: more or longer notes than allowed (" +
                                     std::to_string(kMaxPlacementNotes) + " of " +
                                     std::to_string(kMaxPlacementNote) + " bytes)");
        }
        if (p.nodes < 1 || p.group_rank < 0 || p.group_rank >= p.nodes || p.rank_base < 0 ||
            p.rank_base >= p.world_size) {
            throw std::runtime_error(
                "placement record out of range: group rank " + std::to_string(p.group_rank) +
                " of " + std::to_string(p.nodes) + ", rank base " + std::to_string(p.rank_base) +
                " of world size " + std::to_string(p.world_size));
        }
        return p;
    } catch (const json::exception& e) {
        throw std::runtime_error(std::string("malformed placement record: ") + e.what());
    } catch (const std::out_of_range& e) {  // json_integer's: 1e30 is no int
        throw std::runtime_error(std::string("malformed placement record: ") + e.what());
    }
}

}  // namespace ptrun::launcher
