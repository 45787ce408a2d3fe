#pragma once
/// --rdzv-backend: how the nodes of a job meet.

#include <string_view>

#include "ptrun/launcher/cli/launch_options.hpp"

namespace ptrun::launcher {

/// Static: fixed node count, --node-rank given, the store at --master-addr:--master-port.
/// C10d: elastic rendezvous at --rdzv-endpoint (ranks assigned when nodes join).
/// Etcd: elastic rendezvous through the etcd cluster whose members --rdzv-endpoint lists; the
/// coordinator is elected among the agents (no node hosts the rendezvous's store).
enum class RdzvBackend { Static, C10d, Etcd };

/// The backend's name as torchrun spells it: "static", "c10d" or "etcd-v2".
std::string_view backend_name(RdzvBackend backend);

/// The backend --rdzv-backend's `raw` value names ("etcd", torchrun's older name, is an alias of
/// "etcd-v2"). Throws UsageError naming the value and the accepted ones for anything else.
RdzvBackend parse_rdzv_backend(const RawValue& raw);

}  // namespace ptrun::launcher
