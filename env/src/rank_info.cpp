#include "ptrun/env/rank_info.hpp"

#include <limits>

#include "ptrun/env/names.hpp"

namespace ptrun::env {
namespace {

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

int int_or(const EnvMap& env, std::string_view name, std::int64_t min, int fallback) {
    auto v = lookup_int(env, name, min, kMaxInt);
    return v ? static_cast<int>(*v) : fallback;
}

}  // namespace

RankInfo rank_info_from_env(const EnvMap& env) {
    RankInfo info;
    info.world_size = int_or(env, names::kWorldSize, 1, 1);
    info.rank = int_or(env, names::kRank, 0, 0);
    info.local_world_size = int_or(env, names::kLocalWorldSize, 1, 1);
    info.local_rank = int_or(env, names::kLocalRank, 0, 0);
    info.group_rank = int_or(env, names::kGroupRank, 0, 0);
    info.group_world_size = int_or(env, names::kGroupWorldSize, 1, 1);
    info.restart_count = int_or(env, names::kRestartCount, 0, 0);
    info.master_addr = lookup(env, names::kMasterAddr).value_or("");
    if (auto port = lookup_int(env, names::kMasterPort, 0, 65535)) {
        info.master_port = static_cast<std::uint16_t>(*port);
    }
    info.use_agent_store = lookup(env, names::kUseAgentStore).value_or("") == "True";
    info.launched = env.find(names::kRank) != env.end() && env.find(names::kWorldSize) != env.end();
    if (info.rank >= info.world_size) {
        throw ParseError("RANK='" + std::to_string(info.rank) +
                         "': expected less than WORLD_SIZE=" + std::to_string(info.world_size));
    }
    if (info.local_rank >= info.local_world_size) {
        throw ParseError(
            "LOCAL_RANK='" + std::to_string(info.local_rank) +
            "': expected less than LOCAL_WORLD_SIZE=" + std::to_string(info.local_world_size));
    }
    return info;
}

}  // namespace ptrun::env
