#include "ptrun/launcher/cli/etcd_settings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>

#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {
namespace {

constexpr std::uint16_t kDefaultEtcdPort = 2379;  // etcd's client port

constexpr std::array<std::string_view, 7> kEtcdKeys{"protocol", "cacert", "ca_cert",     "cert",
                                                    "ssl_cert", "key",    "ssl_cert_key"};

std::string item(std::string_view key, std::string_view value) {
    return "--rdzv-conf " + std::string(key) + "=" + std::string(value);
}

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
}

/// The protocol in use and what chose it, for the messages that depend on it.
struct Protocol {
    std::string name = "http";
    std::string origin = "the default";
    bool chosen = false;  ///< protocol= or a member's scheme named it
};

/// One member of the list: its text as written, its URL scheme ("" without one), where it is.
struct Member {
    std::string text;
    std::string scheme;
    HostPort at;
};

class MemberList {
  public:
    explicit MemberList(const std::string& list) : list_(list) {}

    [[noreturn]] void bad(const std::string& why) const {
        throw UsageError("--rdzv-endpoint '" + list_ + "': " + why);
    }
    /// Names the member too when the list has several.
    [[noreturn]] void bad_member(const std::string& member, const std::string& why) const {
        if (list_.find(',') == std::string::npos) bad(why);
        bad("member '" + member + "': " + why);
    }

    Member parse(std::string_view text) const {
        Member m{std::string(text), {}, {}};
        std::string_view rest = text;
        if (auto sep = rest.find("://"); sep != std::string_view::npos) {
            m.scheme = lower(rest.substr(0, sep));
            if (m.scheme != "http" && m.scheme != "https")
                bad_member(m.text, "expected http:// or https:// before HOST[:PORT]");
            rest.remove_prefix(sep + 3);
            if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
            if (rest.find('/') != std::string_view::npos)
                bad_member(m.text, "expected HOST[:PORT] after the scheme, without a path");
        }
        if (rest.empty()) bad_member(m.text, "expected HOST[:PORT]");
        EndpointText e;
        try {
            e = split_endpoint(rest, "rdzv-endpoint");
        } catch (const UsageError& err) {
            // split_endpoint says "--rdzv-endpoint 'REST': WHY": keep WHY, name the whole list.
            const std::string prefix = "--rdzv-endpoint '" + std::string(rest) + "': ";
            std::string why = err.what();
            if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
            // etcd listens on a port every node knows: never 0 (any free port).
            const std::string any_port = "PORT from 0 to 65535";
            if (auto at = why.find(any_port); at != std::string::npos)
                why.replace(at, any_port.size(), "PORT from 1 to 65535");
            bad_member(m.text, why);
        }
        if (e.port == 0) bad_member(m.text, "expected a port from 1 to 65535");
        m.at = {std::move(e.host), e.port.value_or(kDefaultEtcdPort)};
        return m;
    }

    std::vector<Member> members() const {
        std::vector<Member> out;
        std::string_view rest = list_;
        if (trimmed(rest).empty()) {
            bad("expected the etcd members, HOST[:PORT],HOST[:PORT],... (default port 2379)");
        }
        for (std::size_t index = 1;; ++index) {
            auto comma = rest.find(',');
            auto text = trimmed(rest.substr(0, comma));
            if (text.empty()) {
                bad("member " + std::to_string(index) +
                    " is empty (expected HOST[:PORT],HOST[:PORT],...)");
            }
            auto m = parse(text);
            for (const auto& seen : out) {
                if (lower(seen.at.host) == lower(m.at.host) && seen.at.port == m.at.port) {
                    bad("members '" + seen.text + "' and '" + m.text + "' are the same member (" +
                        format_endpoint(m.at.host, m.at.port) + "); expected each once");
                }
            }
            out.push_back(std::move(m));
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
        return out;
    }

  private:
    const std::string& list_;
};

/// protocol=, then the members' schemes, which must agree with it and with each other.
Protocol protocol_of(const RdzvConf& conf, const std::vector<Member>& members,
                     const MemberList& list) {
    Protocol p;
    if (auto it = conf.find("protocol"); it != conf.end()) {
        p.name = lower(trimmed(it->second));
        if (p.name != "http" && p.name != "https")
            throw UsageError(item(it->first, it->second) + ": expected http or https");
        p.origin = item(it->first, it->second);
        p.chosen = true;
    }
    const Member* first_scheme = nullptr;
    for (const auto& m : members) {
        if (m.scheme.empty()) continue;
        if (first_scheme && first_scheme->scheme != m.scheme) {
            list.bad("members '" + first_scheme->text + "' and '" + m.text +
                     "' name different protocols; expected one for every member");
        }
        if (!first_scheme && p.chosen && m.scheme != p.name) {
            list.bad("member '" + m.text + "' says " + m.scheme + " but " + p.origin +
                     "; expected one protocol");
        }
        if (!first_scheme && !p.chosen) {
            p.name = m.scheme;
            p.origin = "member '" + m.text + "'";
            p.chosen = true;
        }
        first_scheme = &m;
    }
    return p;
}

/// A TLS file key and its torchrun alias, as given.
struct TlsKey {
    std::string key;  ///< the spelling used (for messages); "" when not given
    std::string value;
};

TlsKey tls_key(const RdzvConf& conf, std::string_view name, std::string_view alias) {
    auto a = conf.find(name);
    auto b = conf.find(alias);
    if (a != conf.end() && b != conf.end() && a->second != b->second) {
        throw UsageError(item(a->first, a->second) + " and " + b->first + "=" + b->second +
                         ": expected one of them (" + std::string(alias) + " is " +
                         std::string(name) + "'s other name)");
    }
    auto it = a != conf.end() ? a : b;
    if (it == conf.end()) return {};
    if (it->second.empty())
        throw UsageError(item(it->first, it->second) + ": expected the path of a PEM file");
    return {it->first, it->second};
}

/// The file must be a regular file ptrun can open for reading (what the etcd client will do).
void check_readable(const TlsKey& k) {
    const int fd = ::open(k.value.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        throw UsageError(item(k.key, k.value) + ": cannot read it: " + std::strerror(errno));
    }
    struct stat st {};
    const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    ::close(fd);
    if (!regular) throw UsageError(item(k.key, k.value) + ": not a regular file (a PEM file)");
}

}  // namespace

bool is_etcd_conf_key(std::string_view key) {
    return std::find(kEtcdKeys.begin(), kEtcdKeys.end(), key) != kEtcdKeys.end();
}

EtcdSettings etcd_settings(const std::string& endpoints, const RdzvConf& conf, bool check_files) {
    const MemberList list(endpoints);
    const auto members = list.members();
    const auto protocol = protocol_of(conf, members, list);

    const auto cacert = tls_key(conf, "cacert", "ca_cert");
    const auto cert = tls_key(conf, "cert", "ssl_cert");
    const auto key = tls_key(conf, "key", "ssl_cert_key");
    if (!cert.key.empty() && key.key.empty()) {
        throw UsageError(item(cert.key, cert.value) +
                         ": expected key=FILE too (the client certificate's private key)");
    }
    if (!key.key.empty() && cert.key.empty()) {
        throw UsageError(item(key.key, key.value) +
                         ": expected cert=FILE too (the client certificate it belongs to)");
    }
    for (const auto* k : {&cacert, &cert, &key}) {
        if (k->key.empty() || protocol.name == "https") continue;
        throw UsageError(item(k->key, k->value) + ": TLS files need protocol=https, but " +
                         (protocol.chosen ? protocol.origin + " says http"
                                          : std::string("the protocol is http (the default)")));
    }
    for (const auto* k : {&cacert, &cert, &key}) {
        if (!k->key.empty() && check_files) check_readable(*k);
    }

    EtcdSettings s;
    for (const auto& m : members) s.endpoints.push_back(m.at);
    s.https = protocol.name == "https";
    s.cacert = cacert.value;
    s.cert = cert.value;
    s.key = key.value;
    return s;
}

}  // namespace ptrun::launcher
