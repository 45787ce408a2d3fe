#include "ptrun/env/worker_env.hpp"

#include "ptrun/env/names.hpp"

namespace ptrun::env {
namespace {

void put(EnvMap& env, std::string_view name, std::string value) {
    env.insert_or_assign(std::string(name), std::move(value));
}

void put_default(EnvMap& env, std::string_view name, std::string value) {
    if (env.find(name) == env.end()) put(env, name, std::move(value));
}

}  // namespace

bool sets_omp_num_threads(const EnvMap& inherited, int local_world_size) {
    return local_world_size > 1 && inherited.find(names::kOmpNumThreads) == inherited.end();
}

EnvMap worker_env(const WorkerIdentity& id, const EnvMap& inherited) {
    EnvMap env = inherited;
    put(env, names::kLocalRank, std::to_string(id.local_rank));
    put(env, names::kRank, std::to_string(id.rank));
    put(env, names::kGroupRank, std::to_string(id.group_rank));
    put(env, names::kRoleRank, std::to_string(id.role_rank));
    put(env, names::kRoleName, id.role_name);
    put(env, names::kLocalWorldSize, std::to_string(id.local_world_size));
    put(env, names::kWorldSize, std::to_string(id.world_size));
    put(env, names::kGroupWorldSize, std::to_string(id.group_world_size));
    put(env, names::kRoleWorldSize, std::to_string(id.role_world_size));
    put(env, names::kMasterAddr, id.master_addr);
    put(env, names::kMasterPort, std::to_string(id.master_port));
    put(env, names::kRestartCount, std::to_string(id.restart_count));
    put(env, names::kMaxRestarts, std::to_string(id.max_restarts));
    put(env, names::kRunId, id.run_id);
    put(env, names::kUseAgentStore, id.use_agent_store ? "True" : "False");
    if (!id.error_file.empty()) put(env, names::kErrorFile, id.error_file);
    put_default(env, names::kTorchNcclAsyncErrorHandling, "1");
    put_default(env, names::kNcclAsyncErrorHandling, "1");
    if (id.requeue_count) put(env, names::kRequeueCount, std::to_string(*id.requeue_count));
    if (id.use_libuv) put_default(env, names::kUseLibuv, *id.use_libuv ? "1" : "0");
    if (sets_omp_num_threads(inherited, id.local_world_size)) put(env, names::kOmpNumThreads, "1");
    return env;
}

}  // namespace ptrun::env
