#include "ptrun/launcher/hosts/host_list.hpp"

#include <charconv>
#include <set>

#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/output/printable.hpp"

namespace ptrun::launcher {
namespace {

constexpr std::size_t kMaxNameLength = 253;  // a DNS name's longest

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

/// True when `part` is a non-empty run of name characters not starting with '-' or '.'.
bool plain_name(std::string_view part) {
    if (part.empty() || part.size() > kMaxNameLength || part[0] == '-' || part[0] == '.')
        return false;
    for (char c : part) {
        if (!name_char(c)) return false;
    }
    return true;
}

/// `text` as a slot count in 1..kMaxSlots, or nullopt.
std::optional<int> slot_count(std::string_view text) {
    int n = 0;
    const auto* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, n);
    if (text.empty() || ec != std::errc{} || ptr != end || n < 1 || n > kMaxSlots)
        return std::nullopt;
    return n;
}

std::string quoted(std::string_view text) { return "'" + printable(text) + "'"; }

/// Splits `text` at any of `separators`, keeping empty pieces.
std::vector<std::string_view> split_at(std::string_view text, std::string_view separators) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (;;) {
        const auto at = text.find_first_of(separators, start);
        out.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
        if (at == std::string_view::npos) return out;
        start = at + 1;
    }
}

/// One `HOST[:SLOTS]` entry of an option (`option` names it in errors).
HostEntry parse_entry(std::string_view entry, std::string_view option) {
    HostEntry e;
    const auto colon = entry.rfind(':');
    std::string_view host = entry.substr(0, colon);
    if (colon != std::string_view::npos) {
        e.slots = slot_count(entry.substr(colon + 1));
        if (!e.slots) {
            throw UsageError(std::string(option) + " entry " + quoted(entry) +
                             ": expected HOST:SLOTS with SLOTS from 1 to " +
                             std::to_string(kMaxSlots));
        }
    }
    check_host_name(host, std::string(option) + " entry " + quoted(entry));
    e.host = std::string(host);
    return e;
}

/// Throws when the list is too long or names a host twice.
void check_list(const std::vector<HostEntry>& hosts, std::string_view what) {
    if (hosts.size() > kMaxHosts) {
        throw UsageError(std::string(what) + ": " + std::to_string(hosts.size()) +
                         " hosts; at most " + std::to_string(kMaxHosts) +
                         " (one remote shell and four descriptors each)");
    }
    std::set<std::string> seen;
    for (const auto& h : hosts) {
        if (!seen.insert(h.name()).second) {
            throw UsageError(std::string(what) + ": host " + quoted(h.name()) +
                             " is listed twice; expected each host once (give it more slots)");
        }
    }
}

/// The entries of an --include/--exclude text: `HOST[:SLOTS]` separated by ',' or '@'
/// (DeepSpeed separates hosts with '@').
std::vector<HostEntry> filter_entries(std::string_view text, std::string_view option) {
    std::vector<HostEntry> out;
    for (auto piece : split_at(text, ",@")) {
        if (piece.empty()) {
            throw UsageError(std::string(option) + " " + quoted(text) +
                             ": an empty entry; expected HOST[:SLOTS],...");
        }
        out.push_back(parse_entry(piece, option));
        if (out.size() > kMaxHosts) check_list(out, option);
    }
    return out;
}

const HostEntry* find_host(const std::vector<HostEntry>& hosts, std::string_view name) {
    for (const auto& h : hosts) {
        if (h.name() == name) return &h;
    }
    return nullptr;
}

}  // namespace

std::string HostEntry::name() const {
    const auto at = host.find('@');
    return at == std::string::npos ? host : host.substr(at + 1);
}

void check_host_name(std::string_view host, std::string_view what) {
    const auto at = host.find('@');
    const bool ok = at == std::string_view::npos
                        ? plain_name(host)
                        : plain_name(host.substr(0, at)) && plain_name(host.substr(at + 1));
    if (!ok) {
        throw UsageError(std::string(what) + ": host " + quoted(host) +
                         " is not a host name; expected [USER@]NAME of letters, digits, '.', '-' "
                         "and '_' (not starting with '-' or '.')");
    }
}

std::vector<HostEntry> parse_host_list(std::string_view text) {
    std::vector<HostEntry> out;
    for (auto piece : split_at(text, ",")) {
        if (piece.empty()) {
            throw UsageError("--hosts " + quoted(text.substr(0, 200)) +
                             ": an empty entry; expected HOST[:SLOTS],...");
        }
        out.push_back(parse_entry(piece, "--hosts"));
        if (out.size() > kMaxHosts) break;  // check_list says how many at most
    }
    check_list(out, "--hosts");
    return out;
}

std::vector<HostEntry> parse_hostfile(std::string_view text, std::string_view path) {
    std::vector<HostEntry> out;
    std::size_t number = 0;
    for (auto line : split_at(text, "\n")) {
        ++number;
        const std::string where = "--hostfile " + quoted(path) + " line " + std::to_string(number);
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        std::vector<std::string_view> words;
        for (auto word : split_at(line, " \t\r")) {
            if (!word.empty()) words.push_back(word);
        }
        if (words.empty()) continue;
        HostEntry e;
        check_host_name(words[0], where);
        e.host = std::string(words[0]);
        for (std::size_t i = 1; i < words.size(); ++i) {
            const auto word = words[i];
            if (word.substr(0, 6) != "slots=" || e.slots ||
                !(e.slots = slot_count(word.substr(6)))) {
                throw UsageError(where + ": " + quoted(word) +
                                 ": expected HOST [slots=N], N from 1 to " +
                                 std::to_string(kMaxSlots));
            }
        }
        out.push_back(std::move(e));
        if (out.size() > kMaxHosts) break;
    }
    if (out.empty()) throw UsageError("--hostfile " + quoted(path) + ": names no host");
    check_list(out, "--hostfile " + quoted(path));
    return out;
}

std::vector<HostEntry> filter_hosts(std::vector<HostEntry> hosts, std::string_view include,
                                    std::string_view exclude) {
    if (!include.empty()) {
        std::vector<HostEntry> kept;
        for (const auto& want : filter_entries(include, "--include")) {
            const auto* have = find_host(hosts, want.name());
            if (!have) {
                throw UsageError("--include: host " + quoted(want.name()) +
                                 " is not in the host list");
            }
            if (find_host(kept, want.name())) {
                throw UsageError("--include: host " + quoted(want.name()) + " is listed twice");
            }
            HostEntry e = *have;
            if (want.slots) {
                if (e.slots && *want.slots > *e.slots) {
                    throw UsageError("--include " +
                                     quoted(want.host + ":" + std::to_string(*want.slots)) +
                                     ": the host has " + std::to_string(*e.slots) + " slots");
                }
                e.slots = want.slots;
            }
            kept.push_back(std::move(e));
        }
        hosts = std::move(kept);
    }
    if (!exclude.empty()) {
        for (const auto& drop : filter_entries(exclude, "--exclude")) {
            auto it = hosts.begin();
            while (it != hosts.end() && it->name() != drop.name()) ++it;
            if (it == hosts.end()) {
                throw UsageError("--exclude: host " + quoted(drop.name()) +
                                 " is not in the host list");
            }
            if (!drop.slots) {
                hosts.erase(it);
                continue;
            }
            if (!it->slots) {
                throw UsageError("--exclude " +
                                 quoted(drop.host + ":" + std::to_string(*drop.slots)) +
                                 ": the host list gives that host no slots to take from");
            }
            if (*drop.slots >= *it->slots) {
                hosts.erase(it);
            } else {
                *it->slots -= *drop.slots;
            }
        }
    }
    if (hosts.empty()) throw UsageError("--include/--exclude leave no host to run on");
    return hosts;
}

}  // namespace ptrun::launcher
