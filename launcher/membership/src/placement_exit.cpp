#include "ptrun/launcher/membership/placement_exit.hpp"

#include <spdlog/spdlog.h>

#include "ptrun/launcher/membership/placement_store_client.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::launcher {
namespace {

constexpr std::chrono::milliseconds kCountOutTimeout{5'000};
/// How long the store host whose worker failed keeps the store for the others' root-cause claims.
constexpr std::chrono::milliseconds kFailedWait{2'000};

}  // namespace

void placement_exit_barrier(const LaunchConfig& config, const FixedPlacement& p, int exit_code,
                            const std::shared_ptr<spdlog::logger>& log,
                            std::chrono::milliseconds timeout) {
    if (!config.master_port || p.world_size < 2) return;
    const std::string count_key = job_exit_key(config, "count");
    const std::string all_key = job_exit_key(config, "all");
    try {
        if (!p.hosts_store) {
            auto client = placement_store_client(config, p, kCountOutTimeout, kCountOutTimeout);
            if (client->add(count_key, 1) == p.world_size - 1) client->set(all_key, "1");
            return;
        }
        auto client = placement_store_client(config, p, kCountOutTimeout);
        if (exit_code != 0) {
            // A failed job: the others end soon; the store stays until they have counted out (at
            // most a few seconds), so that they can read which rank failed first.
            try {
                client->wait({all_key}, kFailedWait);
            } catch (const rdzv::StoreTimeout&) {
                // a rank that hangs on: its launcher (mpirun, srun) ends it
            }
            return;
        }
        log->info(
            "worker done; keeping the store up until the other {} ranks' workers end (at most {} "
            "s)",
            p.world_size - 1, timeout.count() / 1000);
        client->wait({all_key}, timeout);
    } catch (const rdzv::StoreTimeout&) {
        log->warn("not every rank ended within {} s; closing the store anyway",
                  timeout.count() / 1000);
    } catch (const rdzv::StoreError& e) {
        if (p.hosts_store) log->warn("exit barrier: {}", e.what());
        // a task without the store: the host is gone already, nothing left to tell it
    }
}

}  // namespace ptrun::launcher
