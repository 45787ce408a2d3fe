#include "ptrun/schedulers/host_file.hpp"

#include <unordered_map>

#include "ptrun/env/env_map.hpp"

namespace ptrun::schedulers {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/// The words of `text`, split at spaces and tabs.
std::vector<std::string_view> words(std::string_view text) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && is_space(text[i])) ++i;
        std::size_t start = i;
        while (i < text.size() && !is_space(text[i])) ++i;
        if (i > start) out.push_back(text.substr(start, i - start));
    }
    return out;
}

/// Throws unless `host` could be a host name or an address: 1..255 bytes of letters, digits and
/// '.', '-', '_', ':', '[', ']', '%' (IPv6 and its zone).
void check_host(std::string_view host, std::string_view subject, std::string_view where) {
    bool ok = !host.empty() && host.size() <= 255;
    for (char c : host) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' || c == ':' ||
                           c == '[' || c == ']' || c == '%';
        ok = ok && plain;
    }
    if (!ok) {
        std::string shown(host.substr(0, 64));
        for (auto& c : shown) {
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
        }
        throw env::ParseError(std::string(subject) + ": " + std::string(where) + ": '" + shown +
                              (host.size() > 64 ? "...'" : "'") +
                              " is not a host name (letters, digits, '.', '-', '_', at most 255)");
    }
}

/// Host name -> its index in the result, so a long file costs one lookup per line.
using HostIndex = std::unordered_map<std::string, std::size_t>;

/// Adds one slot to `host`'s entry, or appends it (at most kMaxHostFileHosts hosts).
void add(std::vector<HostSlots>& hosts, HostIndex& seen, std::string_view host,
         std::string_view subject) {
    auto [it, added] = seen.try_emplace(std::string(host), hosts.size());
    if (!added) {
        ++hosts[it->second].slots;
        return;
    }
    if (hosts.size() >= kMaxHostFileHosts) {
        throw env::ParseError(std::string(subject) + ": more than " +
                              std::to_string(kMaxHostFileHosts) + " hosts");
    }
    hosts.push_back({std::string(host), 1});
}

}  // namespace

std::vector<HostSlots> parse_host_file(std::string_view text, std::string_view subject) {
    std::vector<HostSlots> hosts;
    HostIndex seen;
    std::size_t line_no = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        auto w = words(line);
        if (w.empty()) continue;
        check_host(w[0], subject, "line " + std::to_string(line_no));
        add(hosts, seen, w[0], subject);
    }
    if (hosts.empty()) throw env::ParseError(std::string(subject) + ": names no host");
    return hosts;
}

std::vector<HostSlots> parse_host_count_pairs(std::string_view text, std::string_view subject) {
    auto w = words(text);
    if (w.empty()) throw env::ParseError(std::string(subject) + ": names no host");
    if (w.size() % 2 != 0) {
        throw env::ParseError(std::string(subject) +
                              ": expected pairs of a host and its slot count ('node1 4 node2 4')");
    }
    if (w.size() / 2 > kMaxHostFileHosts) {
        throw env::ParseError(std::string(subject) + ": more than " +
                              std::to_string(kMaxHostFileHosts) + " hosts");
    }
    std::vector<HostSlots> hosts;
    HostIndex seen;
    for (std::size_t i = 0; i < w.size(); i += 2) {
        check_host(w[i], subject, "host " + std::to_string(i / 2 + 1));
        auto count = env::parse_int(w[i + 1]);
        if (!count || *count < 1 || *count > 65536) {
            throw env::ParseError(std::string(subject) + ": slot count '" +
                                  std::string(w[i + 1].substr(0, 32)) + "' of " +
                                  std::string(w[i]) + ": expected 1 to 65536");
        }
        if (!seen.try_emplace(std::string(w[i]), hosts.size()).second) {
            throw env::ParseError(std::string(subject) + ": host " + std::string(w[i]) +
                                  " is named twice");
        }
        hosts.push_back({std::string(w[i]), static_cast<int>(*count)});
    }
    return hosts;
}

}  // namespace ptrun::schedulers
