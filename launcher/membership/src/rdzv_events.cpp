#include "ptrun/launcher/membership/rdzv_events.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ptrun/sys/json_integer.hpp"

namespace ptrun::launcher {
namespace {

using nlohmann::json;

struct Encoder {
    json operator()(const JoinEvent& e) const {
        return {{"type", "join"}, {"node", json::parse(encode(e.node))}, {"seq", e.seq}};
    }
    json operator()(const FailedEvent& e) const {
        return {{"type", "failed"},
                {"round", e.round},
                {"id", e.id},
                {"end", json::parse(encode(e.end))}};
    }
    json operator()(const SucceededEvent& e) const {
        return {{"type", "succeeded"}, {"round", e.round}, {"id", e.id}};
    }
    json operator()(const LeavingEvent& e) const {
        json j{{"type", "leaving"}, {"round", e.round}, {"id", e.id}, {"why", e.why}};
        if (e.checkpointed) j["checkpointed"] = e.exit_code;  // absent: not a checkpoint
        return j;
    }
    json operator()(const NodeReport& e) const {
        return {{"type", e.kind == ReportKind::Timeline ? "timeline" : "status"},
                {"round", e.round},
                {"id", e.id},
                {"text", e.text}};
    }
};

}  // namespace

std::string encode(const RdzvEvent& event) { return std::visit(Encoder{}, event).dump(); }

RdzvEvent decode_event(const std::string& text) {
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("type"))
        throw std::runtime_error("malformed event");
    try {
        auto type = j.at("type").get<std::string>();
        if (type == "join")
            return JoinEvent{decode_node(j.at("node").dump()), sys::json_integer<int>(j.at("seq"))};
        if (type == "failed") {
            return FailedEvent{sys::json_integer<int>(j.at("round")), j.at("id").get<std::string>(),
                               decode_end(j.at("end").dump())};
        }
        if (type == "succeeded")
            return SucceededEvent{sys::json_integer<int>(j.at("round")),
                                  j.at("id").get<std::string>()};
        if (type == "leaving") {
            LeavingEvent e{sys::json_integer<int>(j.at("round")), j.at("id").get<std::string>(),
                           j.at("why").get<std::string>()};
            if (j.contains("checkpointed")) {  // older agents never send it
                e.checkpointed = true;
                e.exit_code = sys::json_integer<int>(j.at("checkpointed"));
            }
            return e;
        }
        if (type == "timeline" || type == "status") {
            NodeReport report{type == "timeline" ? ReportKind::Timeline : ReportKind::Status,
                              sys::json_integer<int>(j.at("round")), j.at("id").get<std::string>(),
                              j.at("text").get<std::string>()};
            if (report.text.size() > kMaxNodeReport)
                throw std::runtime_error("a " + type + " report over " +
                                         std::to_string(kMaxNodeReport) + " bytes");
            return report;
        }
        throw std::runtime_error("unknown event type '" + type + "'");
    } catch (const json::exception& e) {
        throw std::runtime_error(std::string("malformed event: ") + e.what());
    } catch (const std::out_of_range& e) {  // json_integer's: 1e30 is no int
        throw std::runtime_error(std::string("malformed event: ") + e.what());
    }
}

}  // namespace ptrun::launcher
