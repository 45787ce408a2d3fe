#include "ptrun/launcher/membership/rdzv_auth.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/membership/hmac_sha256.hpp"

namespace ptrun::launcher {
namespace {

constexpr std::string_view kTag = "hmac-sha256:";
constexpr std::size_t kMacHex = 64;
constexpr std::size_t kMinKeyBytes = 16;
constexpr std::size_t kMaxKeyBytes = 4096;

std::string errno_text(int e) { return std::strerror(e); }

[[noreturn]] void bad_key(const RdzvKeySource& s, const std::string& why) {
    throw UsageError("rendezvous key file '" + s.path + "' (" + s.origin + "): " + why);
}

/// Creates `path` with 32 random bytes (hex) unless it exists: written under a temporary name
/// and hard-linked into place, so that nodes racing on a shared home all end up reading one key.
void create_key_file(const RdzvKeySource& s) {
    auto slash = s.path.rfind('/');
    if (slash != std::string::npos && slash > 0) {
        const std::string dir = s.path.substr(0, slash);
        if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
            bad_key(s, "cannot create its directory: " + errno_text(errno));
        }
    }
    std::array<unsigned char, 32> bytes{};
    if (::getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
        bad_key(s, "cannot read random bytes: " + errno_text(errno));
    }
    std::string text;
    for (auto b : bytes) {
        static constexpr char kHex[] = "0123456789abcdef";
        text += kHex[b >> 4];
        text += kHex[b & 0xf];
    }
    text += '\n';
    char host[64] = {};
    ::gethostname(host, sizeof host - 1);
    const std::string tmp = s.path + ".tmp." + host + "." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) bad_key(s, "cannot create '" + tmp + "': " + errno_text(errno));
    bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    int saved = errno;
    written = ::fsync(fd) == 0 && written;
    ::close(fd);
    if (!written) {
        ::unlink(tmp.c_str());
        bad_key(s, "cannot write '" + tmp + "': " + errno_text(saved));
    }
    int linked = ::link(tmp.c_str(), s.path.c_str());
    saved = errno;
    ::unlink(tmp.c_str());
    if (linked != 0 && saved != EEXIST) bad_key(s, "cannot create it: " + errno_text(saved));
}

std::string read_key_file(const RdzvKeySource& s) {
    int fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT && s.create) {
        create_key_file(s);
        fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    }
    if (fd < 0) bad_key(s, "cannot open it: " + errno_text(errno));
    struct stat st {};
    std::string key;
    std::string problem;
    if (::fstat(fd, &st) != 0) {
        problem = "cannot stat it: " + errno_text(errno);
    } else if (!S_ISREG(st.st_mode)) {
        problem = "expected a regular file";
    } else if (st.st_uid != ::geteuid()) {
        problem = "owned by uid " + std::to_string(st.st_uid) + ", not by this user";
    } else if ((st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        problem =
            std::string("readable or writable by other users (mode ") + mode + "): chmod 600 it";
    } else {
        std::array<char, kMaxKeyBytes + 1> buf{};
        ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0) {
            problem = "cannot read it: " + errno_text(errno);
        } else if (static_cast<std::size_t>(n) > kMaxKeyBytes) {
            problem = "longer than " + std::to_string(kMaxKeyBytes) + " bytes";
        } else {
            key.assign(buf.data(), static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    if (!problem.empty()) bad_key(s, problem);
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
    if (key.size() < kMinKeyBytes) {
        bad_key(s, "holds " + std::to_string(key.size()) + " bytes; expected at least " +
                       std::to_string(kMinKeyBytes) + " (e.g. head -c 32 /dev/urandom | base64)");
    }
    return key;
}

}  // namespace

std::optional<RdzvKeySource> rdzv_key_source(const std::string& key_file, const std::string& run_id,
                                             const env::EnvMap& env) {
    RdzvKeySource s;
    s.scope = "run " + run_id;
    if (!key_file.empty()) {
        s.path = key_file;
        s.origin = "--rdzv-conf key_file";
        return s;
    }
    if (auto path = env::lookup(env, "PTRUN_RDZV_KEY_FILE"); path && !path->empty()) {
        s.path = *path;
        s.origin = "PTRUN_RDZV_KEY_FILE";
        return s;
    }
    auto job = env::lookup(env, "SLURM_JOB_ID");
    auto home = env::lookup(env, "HOME");
    if (!job || job->empty() || !home || home->empty() || home->front() != '/') return std::nullopt;
    s.path = *home + "/.ptrun/rdzv-key";
    s.create = true;
    s.origin = "the SLURM default, bound to job " + *job;
    s.scope += "\nslurm job " + *job;
    return s;
}

std::string load_rdzv_secret(const RdzvKeySource& source) {
    const std::string file_key = read_key_file(source);
    auto derived = hmac_sha256(file_key, "ptrun rendezvous key v1\n" + source.scope);
    return std::string(reinterpret_cast<const char*>(derived.data()), derived.size());
}

RdzvAuth make_rdzv_auth(const std::string& key_file, const std::string& run_id,
                        const env::EnvMap& env, spdlog::logger& log) {
    auto source = rdzv_key_source(key_file, run_id, env);
    if (!source) return RdzvAuth();
    try {
        RdzvAuth auth(load_rdzv_secret(*source));
        log.info("rendezvous values are authenticated with the key in {} ({})", source->path,
                 source->origin);
        return auth;
    } catch (const UsageError& e) {
        if (!source->create) throw;
        log.warn(
            "rendezvous values are NOT authenticated: {}; set --rdzv-conf key_file=PATH (see man "
            "ptrun)",
            e.what());
        return RdzvAuth();
    }
}

RdzvAuth::RdzvAuth(std::string secret) : secret_(std::move(secret)) {}

std::string RdzvAuth::mac(std::string_view key, std::string_view value) const {
    std::string message = std::to_string(key.size()) + ":";
    message.append(key);
    message.append(value);
    return to_hex(hmac_sha256(secret_, message));
}

std::string RdzvAuth::seal(std::string_view key, std::string_view value) const {
    if (!enabled()) return std::string(value);
    std::string out(kTag);
    out += mac(key, value);
    out += ':';
    out.append(value);
    return out;
}

std::optional<std::string> RdzvAuth::open(std::string_view key, std::string_view stored,
                                          std::string* why) const {
    const bool sealed = stored.substr(0, kTag.size()) == kTag;
    if (!enabled()) {
        if (!sealed) return std::string(stored);
        *why =
            "it is authenticated, but this agent has no rendezvous key (give every node the same "
            "key_file)";
        return std::nullopt;
    }
    if (!sealed) {
        *why = "it is not authenticated (written by a client without this job's rendezvous key)";
        return std::nullopt;
    }
    const std::size_t body = kTag.size() + kMacHex + 1;
    if (stored.size() < body || stored[body - 1] != ':') {
        *why = "its authentication tag is malformed";
        return std::nullopt;
    }
    std::string_view value = stored.substr(body);
    if (!equal_constant_time(stored.substr(kTag.size(), kMacHex), mac(key, value))) {
        *why = "its MAC does not match this job's rendezvous key (another key, or a forgery)";
        return std::nullopt;
    }
    return std::string(value);
}

}  // namespace ptrun::launcher
