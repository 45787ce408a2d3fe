#include "ptrun/launcher/cli/logs_args.hpp"

#include <charconv>
#include <optional>

#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {
namespace {

/// `text` as a whole decimal number from `low` to `high`, or nullopt.
std::optional<long long> number(std::string_view text, long long low, long long high) {
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < low ||
        value > high) {
        return std::nullopt;
    }
    return value;
}

/// `text` with control characters shown as '?', to be named in a message.
std::string printable(std::string text) {
    for (char& c : text) {
        if ((c >= 0 && c < 0x20) || c == 0x7f) c = '?';
    }
    return text;
}

}  // namespace

LogsArgs parse_logs_args(const std::vector<std::string>& args, std::size_t max_tail) {
    LogsArgs out;
    bool have_endpoint = false;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](const char* flag) -> std::string {
            if (i + 1 >= args.size()) {
                throw UsageError(std::string("ptrun logs: ") + flag + " needs a value");
            }
            return args[++i];
        };
        if (a == "--rank") {
            const std::string list = value("--rank");
            std::string_view rest = list;
            while (true) {
                const auto comma = rest.find(',');
                const auto r = number(rest.substr(0, comma), 0, 0x7fffffff);
                if (!r) {
                    throw UsageError("ptrun logs --rank '" + printable(list) +
                                     "': expected ranks R[,R...], each from 0");
                }
                out.ranks.push_back(static_cast<int>(*r));
                if (comma == std::string_view::npos) break;
                rest.remove_prefix(comma + 1);
            }
        } else if (a == "--tail") {
            const std::string text = value("--tail");
            const auto n = number(text, 1, static_cast<long long>(max_tail));
            if (!n) {
                throw UsageError("ptrun logs --tail '" + printable(text) +
                                 "': expected a number of lines per rank from 1 to " +
                                 std::to_string(max_tail));
            }
            out.tail = static_cast<std::size_t>(*n);
        } else if (a == "--follow" || a == "-f") {
            out.follow = true;
        } else if (!a.empty() && a[0] == '-') {
            throw UsageError("ptrun logs: unknown option '" + printable(a) +
                             "' (expected --rank, --tail, --follow)");
        } else if (have_endpoint) {
            throw UsageError("ptrun logs: expected one HOST:PORT, got '" + printable(a) + "' too");
        } else {
            const auto at = split_endpoint(a, "ptrun logs");
            if (!at.port || *at.port == 0) {
                throw UsageError("ptrun logs '" + printable(a) +
                                 "': expected HOST:PORT with PORT from 1 to 65535 (the "
                                 "--health-port)");
            }
            out.host = at.host;
            out.port = *at.port;
            have_endpoint = true;
        }
    }
    if (!have_endpoint) {
        throw UsageError("ptrun logs: expected HOST:PORT, a running ptrun's --health-port");
    }
    return out;
}

}  // namespace ptrun::launcher
