#pragma once
/// The environment a launcher gives each worker: exactly torchrun's contract.

#include <cstdint>
#include <optional>
#include <string>

#include "ptrun/env/env_map.hpp"
#include "ptrun/env/rank_place.hpp"

namespace ptrun::env {

/// Who one worker is (its RankPlace and role) and where its store lives; every field maps to one
/// variable of names.hpp.
struct WorkerIdentity : RankPlace {
    int role_rank = 0;
    std::string role_name = "default";
    int role_world_size = 1;
    std::string master_addr = "127.0.0.1";
    std::uint16_t master_port = 0;
    int restart_count = 0;
    int max_restarts = 0;
    std::string run_id = "none";
    bool use_agent_store = false;
    std::string error_file;  ///< empty: TORCHELASTIC_ERROR_FILE is not set
    /// --rdzv-conf use_libuv: USE_LIBUV ("1" or "0"), which torch 2.x's env:// TCPStore reads,
    /// unless inherited; nullopt: not set.
    std::optional<bool> use_libuv;
    /// --requeue: PTRUN_REQUEUE_COUNT, the job's requeues so far; nullopt: not set.
    std::optional<int> requeue_count;
};

/// `inherited` plus the contract variables for `id`. NCCL async error handling defaults to "1"
/// and OMP_NUM_THREADS to "1" (only when unset and more than one local worker runs).
EnvMap worker_env(const WorkerIdentity& id, const EnvMap& inherited);

/// True when worker_env would set OMP_NUM_THREADS for a group of `local_world_size` workers.
bool sets_omp_num_threads(const EnvMap& inherited, int local_world_size);

}  // namespace ptrun::env
