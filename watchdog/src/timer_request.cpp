#include "ptrun/watchdog/timer_request.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "flat_json.hpp"

namespace ptrun::watchdog {
namespace {

using detail::FlatObject;
using detail::JsonNumber;

const JsonNumber* number_field(const FlatObject& o, std::string_view key) {
    auto it = o.find(key);
    if (it == o.end()) return nullptr;
    const auto* n = std::get_if<JsonNumber>(&it->second);
    if (n == nullptr)
        throw TimerRequestError("timer request: '" + std::string(key) + "' is not a number");
    return n;
}

std::int64_t integer_field(const FlatObject& o, std::string_view key, std::int64_t min,
                           std::int64_t max) {
    const JsonNumber* n = number_field(o, key);
    if (n == nullptr) throw TimerRequestError("timer request: no '" + std::string(key) + "'");
    if (!n->is_integer || n->integer < min || n->integer > max) {
        throw TimerRequestError(
            fmt::format("timer request: '{}' must be an integer in [{}, {}]", key, min, max));
    }
    return n->integer;
}

/// A JSON string of `s` as Python's json.dumps writes it (ensure_ascii: \uXXXX beyond ASCII is
/// not needed for a reader; UTF-8 passes through).
std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

}  // namespace

TimerRequest parse_timer_request(std::string_view line) {
    if (line.size() > kMaxTimerRequestBytes) {
        throw TimerRequestError(fmt::format("timer request of {} bytes: at most {} accepted",
                                            line.size(), kMaxTimerRequestBytes));
    }
    FlatObject o;
    try {
        o = detail::parse_flat_object(line);
    } catch (const detail::JsonError& e) {
        throw TimerRequestError(std::string("timer request is not a flat JSON object: ") +
                                e.what());
    }
    if (o.count("version") != 0) {
        const std::int64_t version = integer_field(o, "version", 0, 1000);
        if (version != 1) {
            throw TimerRequestError(
                fmt::format("timer request version {}: only 1 is known", version));
        }
    }
    TimerRequest r;
    r.pid =
        static_cast<pid_t>(integer_field(o, "pid", 1, std::numeric_limits<std::int32_t>::max()));
    auto scope = o.find("scope_id");
    if (scope == o.end()) throw TimerRequestError("timer request: no 'scope_id'");
    const auto* name = std::get_if<std::string>(&scope->second);
    if (name == nullptr) throw TimerRequestError("timer request: 'scope_id' is not a string");
    r.scope_id = *name;
    const JsonNumber* expiry = number_field(o, "expiration_time");
    if (expiry == nullptr) throw TimerRequestError("timer request: no 'expiration_time'");
    if (std::isnan(expiry->value))
        throw TimerRequestError("timer request: 'expiration_time' is NaN");
    r.expiration_time = expiry->value;
    if (o.count("signal") != 0) {
        const auto sig =
            integer_field(o, "signal", std::numeric_limits<std::int32_t>::min(), kMaxSignal);
        r.signal = sig > 0 ? static_cast<int>(sig) : 0;
    }
    return r;
}

std::string format_timer_request(const TimerRequest& r) {
    std::string expiry;
    if (std::isinf(r.expiration_time)) {
        expiry = r.expiration_time > 0 ? "Infinity" : "-Infinity";
    } else {
        expiry = fmt::format("{}", r.expiration_time);
    }
    return fmt::format(
        R"({{"version": 1, "pid": {}, "scope_id": {}, "expiration_time": {}, "signal": {}}})",
        r.pid, json_string(r.scope_id), expiry, r.signal);
}

}  // namespace ptrun::watchdog
