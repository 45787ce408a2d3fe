#pragma once
/// Creating a process group from ptrun's (torchrun's) worker environment.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "ptrun/ddp/backend.hpp"
#include "ptrun/ddp/process_group.hpp"
#include "ptrun/ddp/shm_copy.hpp"
#include "ptrun/env/env_map.hpp"
#include "ptrun/env/rank_place.hpp"

namespace ptrun::ddp {

/// How to build a process group.
struct InitOptions {
    /// Cpu, Nccl or Auto (nccl when libnccl.so.2 loads and a GPU exists, else cpu). Nccl
    /// collectives take CUDA device buffers; code that passes host memory asks for Cpu. From
    /// text ("cpu", "nccl", "auto"): parse_backend.
    Backend backend = Backend::Auto;
    /// Bound on bootstrap and on every collective.
    std::chrono::milliseconds timeout{std::chrono::seconds(300)};
    /// CUDA device for nccl; -1 = local_rank.
    int device = -1;
    /// How the cpu backend moves data between the ranks of a node: Auto (the default: each
    /// message size times the candidates on its first calls, every local rank agreeing on the
    /// fastest, and checks again every few seconds of use), or one for every size: Streamed
    /// or Plain (shared slots, non-temporal or ordinary stores), SingleCopy (straight between
    /// the ranks' buffers; needs ptrace access between them). Same on every rank. From text
    /// ("auto", "streamed", "plain", "single-copy"): parse_shm_copy.
    ShmCopy shm_copy = ShmCopy::Auto;
    /// Names the group's keys in the bootstrap store; every rank of the group passes the same.
    /// A process that creates more than one group in a run gives each its own name (a second
    /// group under a name this rank already used in this run and restart is refused, by name).
    std::string group_name = "world";
};

/// A worker's place in the job (rank, world_size, local_rank, ... of env::RankPlace) and where the
/// bootstrap store lives.
struct RunContext : env::RankPlace {
    int restart_count = 0;
    std::string master_addr;
    int master_port = 0;
    std::string run_id = "none";
    /// The launcher's heartbeat record for this worker (PTRUN_HEARTBEAT_FILE; docs/heartbeat.md):
    /// every group made from this context beats on each completed collective. Empty: none.
    std::string heartbeat_file;
    /// The recovery generation whose group this context builds (PTRUN_GENERATION; 0: the
    /// attempt's first workers). restart_count - generation is the attempt's base, the same for
    /// survivors and replacements; reform_process_group keeps it so (recovery.hpp).
    std::int64_t generation = 0;
    /// The launcher replaces a failed worker alone and the others may re-form their group
    /// (PTRUN_RESTART_POLICY=failed); false: no recovery may be attempted.
    bool recovery = false;
};

/// Reads the place (env::rank_info_from_env: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
/// GROUP_RANK, GROUP_WORLD_SIZE), MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT,
/// TORCHELASTIC_RUN_ID, PTRUN_HEARTBEAT_FILE, PTRUN_GENERATION, PTRUN_RESTART_POLICY; world size 1
/// when no ptrun env is set.
/// Throws env::ParseError naming the variable on a malformed value.
RunContext run_context_from_env(const env::EnvMap& env);

/// Builds the group; blocks on the store at master_addr:master_port (keys under a prefix that
/// includes run_id, the attempt and the generation) until every rank joined, at most
/// options.timeout. World size 1 needs no store. Maps context.heartbeat_file when set. Throws
/// CollectiveError (CollectiveTimeout on bootstrap timeout; an unusable heartbeat file, naming it).
std::unique_ptr<ProcessGroup> init_process_group(const RunContext& context,
                                                 const InitOptions& options = {});

/// init_process_group(run_context_from_env(<the process environment>), options).
std::unique_ptr<ProcessGroup> init_process_group_from_environment(const InitOptions& options = {});

}  // namespace ptrun::ddp
