#include "ptrun/launcher/output/error_file.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ptrun::launcher {
namespace {

std::string text_of(const nlohmann::json& j) {
    if (j.is_string()) return j.get<std::string>();
    if (j.is_number()) return j.dump();
    return "";
}

}  // namespace

std::optional<WorkerErrorReport> parse_error_file(const std::string& text) {
    auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("message")) return std::nullopt;
    const auto& msg = doc["message"];
    WorkerErrorReport report;
    if (msg.is_string()) {
        report.message = msg.get<std::string>();
        if (doc.contains("timestamp")) report.timestamp = text_of(doc["timestamp"]);
        return report;
    }
    if (!msg.is_object()) return std::nullopt;
    if (msg.contains("message")) report.message = text_of(msg["message"]);
    if (msg.contains("extraInfo") && msg["extraInfo"].is_object()) {
        const auto& extra = msg["extraInfo"];
        if (extra.contains("py_callstack")) report.traceback = text_of(extra["py_callstack"]);
        if (extra.contains("timestamp")) report.timestamp = text_of(extra["timestamp"]);
    }
    return report;
}

std::optional<WorkerErrorReport> read_error_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream buffer;
    buffer << in.rdbuf();
    return parse_error_file(buffer.str());
}

}  // namespace ptrun::launcher
