#include "ptrun/watchdog/log_follow.hpp"

#include <charconv>

namespace ptrun::watchdog {
namespace {

/// All of `text` as a decimal number of at most `max_digits` digits; nullopt otherwise.
std::optional<std::uint64_t> decimal(std::string_view text, std::size_t max_digits) {
    if (text.empty() || text.size() > max_digits) return std::nullopt;
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

/// Removes "name=" from the front of `text` and returns the value up to '&' (removed too).
std::optional<std::string_view> take(std::string_view& text, std::string_view name) {
    if (text.substr(0, name.size()) != name || text.substr(name.size(), 1) != "=") {
        return std::nullopt;
    }
    text.remove_prefix(name.size() + 1);
    const auto amp = text.find('&');
    const auto value = text.substr(0, amp);
    text.remove_prefix(amp == std::string_view::npos ? text.size() : amp + 1);
    return value;
}

}  // namespace

bool is_logs_wait_query(std::string_view query) { return query.substr(0, 5) == "seen="; }

std::optional<LogsWaitQuery> parse_logs_wait_query(std::string_view query, std::string* error) {
    auto fail = [error](std::string why) -> std::optional<LogsWaitQuery> {
        if (error) *error = std::move(why);
        return std::nullopt;
    };
    if (query.size() > 64) return fail("longer than 64 bytes");
    std::string_view rest = query;
    const auto seen = take(rest, "seen");
    const auto seq = seen ? decimal(*seen, 19) : std::nullopt;
    if (!seq) return fail("expected seen=COUNT first");
    const auto wait = take(rest, "wait");
    const auto ms = wait ? decimal(*wait, 9) : std::nullopt;
    if (!ms || *ms > static_cast<std::uint64_t>(kMaxLogWait.count())) {
        return fail("expected wait=MS from 0 to " + std::to_string(kMaxLogWait.count()));
    }
    if (!rest.empty()) return fail("unexpected parameters after wait");
    return LogsWaitQuery{*seq, std::chrono::milliseconds(static_cast<std::int64_t>(*ms))};
}

std::string logs_wait_query_text(const LogsWaitQuery& query) {
    return "seen=" + std::to_string(query.seen) + "&wait=" + std::to_string(query.wait.count());
}

std::string logs_wait_answer_text(const LogsWaitAnswer& answer) {
    std::string text = "ptrun-logs-wait 1\nS " + std::to_string(answer.count) + "\n";
    if (answer.exit_code) text += "X " + std::to_string(*answer.exit_code) + "\n";
    return text;
}

std::optional<LogsWaitAnswer> parse_logs_wait_answer(std::string_view text) {
    const std::string_view magic = "ptrun-logs-wait 1\nS ";
    if (text.substr(0, magic.size()) != magic || text.size() > 128) return std::nullopt;
    text.remove_prefix(magic.size());
    auto nl = text.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    const auto count = decimal(text.substr(0, nl), 19);
    if (!count) return std::nullopt;
    LogsWaitAnswer answer{*count, std::nullopt};
    text.remove_prefix(nl + 1);
    if (text.empty()) return answer;
    nl = text.find('\n');
    if (text.substr(0, 2) != "X " || nl == std::string_view::npos || nl + 1 != text.size()) {
        return std::nullopt;
    }
    const auto code = decimal(text.substr(2, nl - 2), 3);
    if (!code || *code > 255) return std::nullopt;
    answer.exit_code = static_cast<int>(*code);
    return answer;
}

}  // namespace ptrun::watchdog
