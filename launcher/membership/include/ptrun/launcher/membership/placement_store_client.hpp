#pragma once
/// One task per rank (mpirun, srun without ptrun's own nodes): every rank's ptrun reaches the
/// workers' store that one of them hosts, for the job's exit barrier and its root cause.

#include <chrono>
#include <memory>
#include <string>

#include "ptrun/launcher/cli/fixed_placement.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"

namespace ptrun::launcher {

/// A client of the placement's workers' store: on loopback from the task that hosts it (it
/// listens on every interface of its host), else at --master-addr; `connect_timeout` and
/// `io_timeout` bound each exchange (io_timeout zero: the client's default). Throws
/// rdzv::StoreError when it cannot connect. The config must name the store's port.
std::unique_ptr<rdzv::TcpStoreClient> placement_store_client(
    const LaunchConfig& config, const FixedPlacement& placement,
    std::chrono::milliseconds connect_timeout,
    std::chrono::milliseconds io_timeout = std::chrono::milliseconds::zero());

/// The key `name` of the job's end in that store ("ptrun/exit/<run id>/<name>").
inline std::string job_exit_key(const LaunchConfig& config, const std::string& name) {
    return "ptrun/exit/" + config.run_id + "/" + name;
}

}  // namespace ptrun::launcher
