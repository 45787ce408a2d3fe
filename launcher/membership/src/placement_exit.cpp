#include "ptrun/launcher/membership/placement_exit.hpp"

#include <spdlog/spdlog.h>

#include "ptrun/launcher/membership/placement_store_client.hpp"
#include "ptrun/launcher/output/duration_text.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::launcher {
namespace {

constexpr std::chrono::milliseconds kCountOutTimeout{5'000};
/// How long the store host whose worker failed keeps the store for the others' root-cause claims.
constexpr std::chrono::milliseconds kFailedWait{2'000};

/// A task without the store says its worker ended: the last one to count out releases the host.
void count_out(const LaunchConfig& config, const FixedPlacement& p) {
    auto client = placement_store_client(config, p, kCountOutTimeout, kCountOutTimeout);
    if (client->add(job_exit_key(config, "count"), 1) == p.world_size - 1) {
        client->set(job_exit_key(config, "all"), "1");
    }
}

/// The store host: blocks until every other task counted out, at most `timeout` (StoreTimeout).
void wait_all_out(const LaunchConfig& config, const FixedPlacement& p,
                  std::chrono::milliseconds timeout) {
    auto client = placement_store_client(config, p, kCountOutTimeout);
    client->wait({job_exit_key(config, "all")}, timeout);
}

}  // namespace

void placement_exit_barrier(const LaunchConfig& config, const FixedPlacement& p, int exit_code,
                            const std::shared_ptr<spdlog::logger>& log,
                            std::chrono::milliseconds timeout) {
    if (!config.master_port || p.world_size < 2) return;
    try {
        if (!p.hosts_store) {
            count_out(config, p);
            return;
        }
        if (exit_code != 0) {
            // A failed job: the others end soon; the store stays until they have counted out (at
            // most a few seconds), so that they can read which rank failed first.
            try {
                wait_all_out(config, p, kFailedWait);
            } catch (const rdzv::StoreTimeout&) {
                // a rank that hangs on: its launcher (mpirun, srun) ends it
            }
            return;
        }
        log->info(
            "worker done; keeping the store up until the other {} ranks' workers end (at most {} "
            "s)",
            p.world_size - 1, timeout.count() / 1000);
        wait_all_out(config, p, timeout);
    } catch (const rdzv::StoreTimeout&) {
        log->warn("not every rank ended within {} s; closing the store anyway",
                  timeout.count() / 1000);
    } catch (const rdzv::StoreError& e) {
        if (p.hosts_store) log->warn("exit barrier: {}", e.what());
        // a task without the store: the host is gone already, nothing left to tell it
    }
}

void placement_checkpoint_barrier(const LaunchConfig& config, const FixedPlacement& p,
                                  const std::shared_ptr<spdlog::logger>& log,
                                  std::chrono::milliseconds timeout) {
    if (!config.master_port || p.world_size < 2) return;
    const auto started = std::chrono::steady_clock::now();
    try {
        if (!p.hosts_store) {
            count_out(config, p);
            return;
        }
        log->info(
            "workers exited on the checkpoint signal; waiting for the other {} ranks' workers to "
            "end before requeueing (at most {})",
            p.world_size - 1, seconds_text(timeout));
        wait_all_out(config, p, timeout);
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - started);
        log->info("--requeue: waited {} until every other rank's worker had ended",
                  seconds_text(waited));
    } catch (const rdzv::StoreTimeout&) {
        log->warn("--requeue: not every other rank's worker ended within {}; requeueing anyway",
                  seconds_text(timeout));
    } catch (const rdzv::StoreError& e) {
        if (p.hosts_store) log->warn("--requeue: cannot wait for the other ranks: {}", e.what());
    }
}

}  // namespace ptrun::launcher
