#include "ptrun/ddp/init.hpp"

#include <unistd.h>

#include "ptrun/ddp/errors.hpp"
#include "ptrun/env/names.hpp"
#include "ptrun/env/rank_info.hpp"
#include "single_process_group.hpp"

namespace ptrun::ddp {

RunContext run_context_from_env(const env::EnvMap& environment) {
    const env::RankInfo info = env::rank_info_from_env(environment);
    RunContext ctx;
    ctx.rank = info.rank;
    ctx.world_size = info.world_size;
    ctx.local_rank = info.local_rank;
    ctx.local_world_size = info.local_world_size;
    ctx.group_rank = info.group_rank;
    ctx.restart_count = info.restart_count;
    ctx.master_addr = info.master_addr;
    ctx.master_port = info.master_port;
    if (auto run_id = env::lookup(environment, env::names::kRunId)) ctx.run_id = *run_id;
    return ctx;
}

std::unique_ptr<ProcessGroup> init_process_group(const RunContext& context,
                                                 const InitOptions& options) {
    if (context.world_size < 1 || context.rank < 0 || context.rank >= context.world_size) {
        throw CollectiveError("init_process_group: rank " + std::to_string(context.rank) +
                              " outside a world of size " + std::to_string(context.world_size));
    }
    if (options.backend != "auto" && options.backend != "cpu" && options.backend != "nccl") {
        throw CollectiveError("init_process_group: unknown backend '" + options.backend +
                              "' (expected cpu, nccl or auto)");
    }
    if (context.world_size == 1) return std::make_unique<detail::SingleProcessGroup>("cpu");
    throw CollectiveError("init_process_group: world size > 1 is not implemented yet");
}

std::unique_ptr<ProcessGroup> init_process_group_from_environment(const InitOptions& options) {
    return init_process_group(run_context_from_env(env::from_environ(environ)), options);
}

}  // namespace ptrun::ddp
