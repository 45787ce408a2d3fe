#include "ptrun/launcher/timeline/timeline_event.hpp"

#include <utility>
#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ptrun/sys/json_integer.hpp"

namespace ptrun::launcher {

namespace {

constexpr std::array<std::pair<Phase, std::string_view>, 17> kNames{{
    {Phase::AgentStart, "agent_start"},
    {Phase::RendezvousJoin, "rendezvous_join"},
    {Phase::RoundClosed, "round_closed"},
    {Phase::AttemptStart, "attempt_start"},
    {Phase::Spawn, "spawn"},
    {Phase::Started, "started"},
    {Phase::PythonUp, "python_up"},
    {Phase::ProcessGroupStart, "process_group_start"},
    {Phase::ProcessGroupReady, "process_group_ready"},
    {Phase::FirstProgress, "first_progress"},
    {Phase::Exit, "exit"},
    {Phase::Restart, "restart"},
    {Phase::Hang, "hang"},
    {Phase::Failure, "failure"},
    {Phase::NodeChange, "node_change"},
    {Phase::PreloadSettled, "preload_settled"},
    {Phase::GenerationJoined, "generation_joined"},
}};

constexpr std::size_t kMaxNodeName = 255;

std::string cut(std::string text, std::size_t max) {
    if (text.size() <= max) return text;
    std::size_t end = max;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text.resize(end);
    return text;
}

}  // namespace

std::string_view phase_name(Phase phase) {
    for (const auto& [p, name] : kNames)
        if (p == phase) return name;
    return "unknown";
}

std::optional<Phase> phase_named(std::string_view name) {
    for (const auto& [p, n] : kNames)
        if (n == name) return p;
    return std::nullopt;
}

bool is_rank_phase(Phase phase) {
    switch (phase) {
        case Phase::Spawn:
        case Phase::Started:
        case Phase::PythonUp:
        case Phase::ProcessGroupStart:
        case Phase::ProcessGroupReady:
        case Phase::FirstProgress:
        case Phase::Exit:
            return true;
        default:
            return false;
    }
}

void add_event(NodeTimeline& timeline, TimelineEvent event) {
    event.detail = cut(std::move(event.detail), kMaxEventDetail);
    auto& events = timeline.events;
    if (events.size() >= kMaxNodeEvents) {
        int oldest = events.front().attempt;
        for (const auto& e : events) oldest = std::min(oldest, e.attempt);
        auto of_oldest = [&](const TimelineEvent& e) { return e.attempt == oldest; };
        if (oldest != event.attempt && std::any_of(events.begin(), events.end(), of_oldest))
            events.erase(std::remove_if(events.begin(), events.end(), of_oldest), events.end());
        else
            events.erase(events.begin());
    }
    events.push_back(std::move(event));
}

void add_memory_sample(NodeTimeline& timeline, MemorySample sample) {
    auto& memory = timeline.memory;
    if (memory.size() >= kMaxMemorySamples) {
        std::size_t kept = 0;
        for (std::size_t i = 1; i < memory.size(); i += 2) memory[kept++] = memory[i];
        memory.resize(kept);
    }
    memory.push_back(sample);
}

std::string encode(const NodeTimeline& timeline) {
    nlohmann::json events = nlohmann::json::array();
    for (const auto& e : timeline.events)
        events.push_back({e.t_ns, e.attempt, e.rank, std::string(phase_name(e.phase)), e.detail});
    nlohmann::json memory = nlohmann::json::array();
    const auto or_null = [](const std::optional<std::uint64_t>& v) {
        return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    for (const auto& m : timeline.memory)
        memory.push_back({m.t_ns, m.rank, or_null(m.bytes), or_null(m.peak_bytes)});
    nlohmann::json j{
        {"node", timeline.node},           {"group_rank", timeline.group_rank},
        {"offset_ns", timeline.offset_ns}, {"offset_error_ns", timeline.offset_error_ns},
        {"events", std::move(events)},     {"memory", std::move(memory)}};
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

NodeTimeline decode_node_timeline(std::string_view text) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        throw std::runtime_error("a node's timeline is not JSON");
    }
    try {
        NodeTimeline t;
        t.node = j.at("node").get<std::string>();
        if (t.node.size() > kMaxNodeName)
            throw std::runtime_error("a node's timeline names a node of over 255 bytes");
        t.group_rank = sys::json_integer<int>(j.at("group_rank"));
        t.offset_ns = sys::json_integer<std::int64_t>(j.at("offset_ns"));
        t.offset_error_ns = sys::json_integer<std::uint64_t>(j.at("offset_error_ns"));
        const auto& events = j.at("events");
        if (!events.is_array() || events.size() > kMaxNodeEvents)
            throw std::runtime_error("a node's timeline has more than " +
                                     std::to_string(kMaxNodeEvents) + " events");
        t.events.reserve(events.size());
        for (const auto& e : events) {
            if (!e.is_array() || e.size() != 5)
                throw std::runtime_error("a node's timeline has a malformed event");
            auto phase = phase_named(e.at(3).get<std::string>());
            if (!phase) throw std::runtime_error("a node's timeline names an unknown phase");
            TimelineEvent event{sys::json_integer<std::uint64_t>(e.at(0)),
                                sys::json_integer<int>(e.at(1)), sys::json_integer<int>(e.at(2)),
                                *phase, e.at(4).get<std::string>()};
            if (event.detail.size() > kMaxEventDetail)
                throw std::runtime_error("a node's timeline has an event detail over " +
                                         std::to_string(kMaxEventDetail) + " bytes");
            if (event.attempt < 0 || event.rank < -1)
                throw std::runtime_error("a node's timeline has a negative attempt or rank");
            t.events.push_back(std::move(event));
        }
        if (auto it = j.find("memory"); it != j.end()) {
            if (!it->is_array() || it->size() > kMaxMemorySamples)
                throw std::runtime_error("a node's timeline has more than " +
                                         std::to_string(kMaxMemorySamples) + " memory samples");
            const auto bytes = [](const nlohmann::json& v) {
                return v.is_null() ? std::nullopt
                                   : std::optional(sys::json_integer<std::uint64_t>(v));
            };
            for (const auto& m : *it) {
                if (!m.is_array() || m.size() != 4)
                    throw std::runtime_error("a node's timeline has a malformed memory sample");
                MemorySample sample{sys::json_integer<std::uint64_t>(m.at(0)),
                                    sys::json_integer<int>(m.at(1)), bytes(m.at(2)),
                                    bytes(m.at(3))};
                if (sample.rank < 0)
                    throw std::runtime_error("a node's timeline has a negative rank");
                t.memory.push_back(sample);
            }
        }
        return t;
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("a node's timeline is malformed: ") + e.what());
    } catch (const std::out_of_range& e) {  // json_integer's
        throw std::runtime_error(std::string("a node's timeline is malformed: ") + e.what());
    }
}

}  // namespace ptrun::launcher
