#pragma once
/// Reads another node's published status (its /status document, status_json's text) on the
/// store host of a multi-node job, which shows the whole job on one endpoint.

#include <cstddef>
#include <optional>
#include <string>

#include "ptrun/watchdog/health_status.hpp"

namespace ptrun::watchdog {

/// A node's workers past this make its report unreadable.
inline constexpr std::size_t kMaxNodeWorkers = 65536;
/// A longer health endpoint ("ADDR:PORT") makes it unreadable.
inline constexpr std::size_t kMaxEndpointText = 300;

/// The NodeStatus `status_json` describes, `age_seconds` after it was made (added to each
/// worker's seconds since progress); nullopt when it is not a ptrun /status document of at most
/// kMaxNodeWorkers workers. The text came over the network: anything may be in it.
std::optional<NodeStatus> node_status_of(const std::string& status_json, double age_seconds);

}  // namespace ptrun::watchdog
