#pragma once
/// Timeouts and switches of the c10d rendezvous, read from `--rdzv-conf` with torchrun's names.

#include <chrono>
#include <optional>
#include <string>

#include "ptrun/launcher/cli/rdzv_conf.hpp"

namespace ptrun::launcher {

using Millis = std::chrono::milliseconds;

/// Defaults are torchrun's. Every duration is given in seconds on the command line.
struct RdzvSettings {
    Millis join_timeout{600'000};  ///< join_timeout: how long a node waits for its round to close
    Millis last_call_timeout{
        30'000};  ///< last_call_timeout: extra wait for more nodes once MIN joined
    Millis close_timeout{
        30'000};  ///< close_timeout: how long the store host waits for the others to leave
    Millis read_timeout{60'000};     ///< read_timeout: deadline of one store request
    Millis heartbeat{5'000};         ///< heartbeat (alias keep_alive_interval): beat interval
    int keep_alive_max_attempt = 3;  ///< beats missed before a node is declared lost
    std::optional<bool> is_host;     ///< is_host: force (or forbid) hosting the store here
    std::string key_file;            ///< key_file: the rendezvous key (rdzv_auth.hpp)
    /// use_libuv (torch 2.x's TCPStore backend): the workers' USE_LIBUV, unless they have one.
    std::optional<bool> use_libuv;
    /// store_type=file: the c10d rendezvous meets in a file (--rdzv-endpoint PATH) on a file
    /// system the nodes share instead of a store hosted on one of them.
    bool file_store = false;
};

/// Reads the known keys of `conf`; throws UsageError naming the key and value on a malformed or
/// unknown key (the message lists the known ones). The etcd backend's keys (is_etcd_conf_key)
/// are accepted and left to etcd_settings.
RdzvSettings rdzv_settings(const RdzvConf& conf);

}  // namespace ptrun::launcher
