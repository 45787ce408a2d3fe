#pragma once
/// `--rdzv-backend etcd-v2`: the etcd members --rdzv-endpoint lists and --rdzv-conf's TLS keys.

#include <string>
#include <string_view>
#include <vector>

#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/launcher/cli/rdzv_conf.hpp"

namespace ptrun::launcher {

/// Where etcd is and how to talk to it: --rdzv-endpoint's members and --rdzv-conf's TLS keys.
struct EtcdSettings {
    std::vector<HostPort> endpoints;  ///< every member given, in order (default port 2379)
    bool https = false;               ///< protocol=https
    std::string cacert;               ///< cacert (alias ca_cert): PEM file
    std::string cert;                 ///< cert (alias ssl_cert)
    std::string key;                  ///< key (alias ssl_cert_key)
};

/// Reads `endpoints` ("host1:2379,host2:2379,[::1]:2379"; a member without a port gets 2379)
/// and `conf`'s etcd keys. Throws UsageError naming the option/key and value on a malformed
/// endpoint list (empty member, bad port, duplicate member), protocol other than http/https, a
/// cert without a key (or the reverse), a file that is missing or unreadable, or TLS files with
/// protocol=http.
///
/// A member may also be written as an URL, `http://host:2379` or `https://host:2379` (as
/// torchrun's users do): its scheme sets the protocol; members naming different schemes, or a
/// scheme that protocol= contradicts, are a UsageError naming both. protocol= is read as
/// torchrun reads it (case-insensitive, spaces around it ignored). Members are trimmed of the
/// spaces around them. Reads the TLS files' metadata (not their content) to check them, unless
/// `check_files` is false (they are another host's: ptrun --hosts checking a host's options).
EtcdSettings etcd_settings(const std::string& endpoints, const RdzvConf& conf,
                           bool check_files = true);

/// True for the --rdzv-conf keys that only the etcd backend reads (protocol and the TLS files,
/// with their aliases); rdzv_settings accepts them, resolve refuses them with other backends.
bool is_etcd_conf_key(std::string_view key);

}  // namespace ptrun::launcher
