#pragma once
/// What a worker learns about itself from its environment (the worker side of the contract).

#include <cstdint>
#include <string>

#include "ptrun/env/env_map.hpp"
#include "ptrun/env/rank_place.hpp"

namespace ptrun::env {

/// A worker's place in the job and its store. Without a launcher: world size 1, rank 0, no store
/// address.
struct RankInfo : RankPlace {
    int restart_count = 0;
    std::string master_addr;
    std::uint16_t master_port = 0;
    bool use_agent_store = false;
    bool launched = false;  ///< true when a launcher set RANK and WORLD_SIZE
};

/// Parses RankInfo from `env` (the place from RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
/// GROUP_RANK, GROUP_WORLD_SIZE); unset variables keep their defaults. Throws ParseError naming the
/// variable on a malformed value or an inconsistent one (e.g. RANK >= WORLD_SIZE).
RankInfo rank_info_from_env(const EnvMap& env);

}  // namespace ptrun::env
