#pragma once
/// --rdzv-backend: how the nodes of a job meet.

#include <string_view>

#include "ptrun/launcher/cli/launch_options.hpp"

namespace ptrun::launcher {

/// Static: fixed node count, --node-rank given, the store at --master-addr:--master-port.
/// C10d: elastic rendezvous at --rdzv-endpoint (ranks assigned when nodes join).
enum class RdzvBackend { Static, C10d };

/// The backend's name as torchrun spells it: "static" or "c10d".
std::string_view backend_name(RdzvBackend backend);

/// The backend --rdzv-backend's `raw` value names. Throws NotSupportedError for the etcd
/// backends and UsageError naming the value and the accepted ones for anything else.
RdzvBackend parse_rdzv_backend(const RawValue& raw);

}  // namespace ptrun::launcher
