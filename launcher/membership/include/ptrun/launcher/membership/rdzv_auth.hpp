#pragma once
/// Integrity of the multi-node rendezvous. The agents of a job share a secret; every value they
/// write under the rendezvous prefix (/ptrun/rdzv/<run id>/) carries an HMAC-SHA-256 over its key
/// name and its bytes, and every value they read there is rejected unless that HMAC checks out.
/// The store protocol itself has no authentication (PyTorch's TCPStore neither), so the workers'
/// own keys stay open to every client; only the launcher's namespace is protected.
///
/// Threat model (see man ptrun, RENDEZVOUS SECURITY): kept out are processes and hosts that can
/// reach the store's port but cannot read the key (other users, other machines). Not kept out:
/// anything running as the job's user (it can read the key file), root, and denial of service
/// (anyone who reaches the port can delete or overwrite keys: the job then fails or times out,
/// but it never reports a success, an assignment or a failure that no agent wrote).

#include <optional>
#include <string>
#include <string_view>

#include "ptrun/env/env_map.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

/// Where an agent's rendezvous key comes from.
struct RdzvKeySource {
    std::string path;     ///< the key file
    bool create = false;  ///< create it (random, mode 0600) when missing: the SLURM default
    std::string origin;   ///< for logs and errors, e.g. "--rdzv-conf key_file"
    std::string scope;    ///< what the key is bound to besides the file: run id, SLURM job id
};

/// Picks the key: `key_file` (--rdzv-conf key_file=PATH, or PET_RDZV_CONF), else
/// $PTRUN_RDZV_KEY_FILE, else under SLURM (SLURM_JOB_ID set, HOME set) $HOME/.ptrun/rdzv-key,
/// which the job's nodes share through the home directory and which is created when missing;
/// nullopt: the rendezvous is not authenticated. Pure.
std::optional<RdzvKeySource> rdzv_key_source(const std::string& key_file, const std::string& run_id,
                                             const env::EnvMap& env);

/// Reads the key file (first creating it when `source.create`) and derives the job's secret from
/// its bytes and `source.scope`. Throws UsageError naming the file when it is missing, not a
/// regular file owned by this user, readable by group or others, or shorter than 16 bytes.
std::string load_rdzv_secret(const RdzvKeySource& source);

class RdzvAuth;

/// The job's RdzvAuth: the key of rdzv_key_source, loaded; logs where it came from. A key that was
/// named (key_file, PTRUN_RDZV_KEY_FILE) and cannot be used is a UsageError; the SLURM default
/// that cannot be used is a warning, and the rendezvous then runs unauthenticated.
RdzvAuth make_rdzv_auth(const std::string& key_file, const std::string& run_id,
                        const env::EnvMap& env, spdlog::logger& log);

/// Seals and opens rendezvous values with the job's secret; with no secret (authentication off)
/// values pass unchanged. Immutable, so one instance may be used from any thread.
class RdzvAuth {
  public:
    /// `secret` empty: authentication off.
    explicit RdzvAuth(std::string secret = {});

    bool enabled() const { return !secret_.empty(); }
    /// `value` as it is stored under `key`: "hmac-sha256:<64 hex>:" + value (or value itself).
    std::string seal(std::string_view key, std::string_view value) const;

    /// The value stored under `key`, or nullopt with `why` saying why it was rejected (not
    /// authenticated, a wrong MAC, or a sealed value while authentication is off).
    std::optional<std::string> open(std::string_view key, std::string_view stored,
                                    std::string* why) const;

  private:
    std::string mac(std::string_view key, std::string_view value) const;

    std::string secret_;
};

}  // namespace ptrun::launcher
