#include "ptrun/ddp/init.hpp"

#include <unistd.h>

#include "copy_strategy.hpp"
#include "cpu_bootstrap.hpp"
#include "nccl/nccl_process_group.hpp"
#include "ptrun/ddp/errors.hpp"
#include "ptrun/env/generation_keys.hpp"
#include "ptrun/env/names.hpp"
#include "ptrun/env/rank_info.hpp"
#include "ptrun/progress/heartbeat.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/prefix_store.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "single_process_group.hpp"

namespace ptrun::ddp {

RunContext run_context_from_env(const env::EnvMap& environment) {
    const env::RankInfo info = env::rank_info_from_env(environment);
    RunContext ctx;
    ctx.place() = info;
    ctx.restart_count = info.restart_count;
    ctx.master_addr = info.master_addr;
    ctx.master_port = info.master_port;
    if (auto run_id = env::lookup(environment, env::names::kRunId)) ctx.run_id = *run_id;
    if (auto hb = env::lookup(environment, progress::kHeartbeatEnv)) ctx.heartbeat_file = *hb;
    namespace keys = env::generation_keys;
    ctx.generation =
        env::lookup_int(environment, keys::kGenerationEnv, 0, ctx.restart_count).value_or(0);
    ctx.recovery = env::lookup(environment, keys::kPolicyEnv) == keys::kFailedPolicy;
    return ctx;
}

std::unique_ptr<ProcessGroup> init_process_group(const RunContext& context,
                                                 const InitOptions& options) {
    if (context.world_size < 1 || context.rank < 0 || context.rank >= context.world_size) {
        throw CollectiveError("init_process_group: rank " + std::to_string(context.rank) +
                              " outside a world of size " + std::to_string(context.world_size));
    }
    const std::optional<detail::CopyStrategy> shm_copy = detail::fixed_strategy(options.shm_copy);
    detail::HeartbeatPtr heartbeat;
    if (!context.heartbeat_file.empty()) {
        try {
            heartbeat = std::make_shared<progress::Heartbeat>(
                progress::Heartbeat::open(context.heartbeat_file));
        } catch (const progress::HeartbeatError& e) {
            throw CollectiveError(std::string("init_process_group: ") + e.what());
        }
    }
    if (options.group_name.empty() || options.group_name.find('/') != std::string::npos) {
        throw CollectiveError("init_process_group: group_name '" + options.group_name +
                              "' (expected a non-empty name without '/')");
    }
    const detail::nccl::Api* nccl = nullptr;
    if (options.backend == Backend::Nccl) {
        std::string why;
        nccl = detail::nccl::load(&why);
        if (nccl == nullptr)
            throw CollectiveError("init_process_group: nccl backend unavailable: " + why);
        if (detail::nccl::device_count() == 0) {
            throw CollectiveError("init_process_group: nccl backend: no CUDA device visible");
        }
    } else if (options.backend == Backend::Auto && detail::nccl::available()) {
        nccl = detail::nccl::load();
    }
    if (context.world_size == 1) {
        if (nccl != nullptr) {
            return std::make_unique<detail::nccl::NcclProcessGroup>(*nccl, context, options,
                                                                    nullptr, heartbeat);
        }
        return std::make_unique<detail::SingleProcessGroup>("cpu", heartbeat);
    }
    if (context.master_addr.empty() || context.master_port <= 0 || context.master_port > 65535) {
        throw CollectiveError("init_process_group: world size " +
                              std::to_string(context.world_size) +
                              " needs the store address (MASTER_ADDR, MASTER_PORT)");
    }
    std::shared_ptr<rdzv::TcpStoreClient> client;
    try {
        client = std::make_shared<rdzv::TcpStoreClient>(rdzv::TcpStoreClientOptions{
            .host = context.master_addr,
            .port = static_cast<std::uint16_t>(context.master_port),
            .dialect = rdzv::Dialect::Modern,
            .connect_timeout = options.timeout,
            .io_timeout = options.timeout,
        });
    } catch (const rdzv::StoreError& e) {
        throw CollectiveError(std::string("init_process_group: cannot reach the store at ") +
                              context.master_addr + ":" + std::to_string(context.master_port) +
                              ": " + e.what());
    }
    // The attempt and the generation in the prefix: a restarted or re-formed group never reads
    // its predecessor's keys. TORCHELASTIC_RESTART_COUNT grows by one for each replacement and
    // each group restart, so restart_count - generation is the attempt's base: a survivor (started
    // at generation 0) and the replacement of generation G (started at count base + G) agree on
    // it, and a group restart (generation 0 again, count higher) gets a base of its own.
    const std::string prefix = "ptrun_ddp/" + context.run_id + "/" +
                               std::to_string(context.restart_count - context.generation) + "/g" +
                               std::to_string(context.generation) + "/" + options.group_name;
    rdzv::PrefixStore store(prefix, *client);
    try {
        // Two groups under one name would share keys and meet as one: the second is refused.
        // Per generation: a re-formed group claims afresh under its own generation's prefix.
        if (store.add("claimed/" + std::to_string(context.rank), 1) != 1) {
            throw CollectiveError("init_process_group: rank " + std::to_string(context.rank) +
                                  " already made a group named '" + options.group_name +
                                  "' in this run (restart " +
                                  std::to_string(context.restart_count) + ", generation " +
                                  std::to_string(context.generation) +
                                  "); give each group InitOptions::group_name of its own");
        }
        if (nccl != nullptr) {
            return std::make_unique<detail::nccl::NcclProcessGroup>(*nccl, context, options, &store,
                                                                    heartbeat);
        }
        // Multi-node leaders keep this connection to post and read why the ring broke.
        return detail::bootstrap_cpu_group(context, store, options.timeout, shm_copy,
                                           detail::FailureBoard(client, prefix + "/failure"),
                                           heartbeat);
    } catch (const rdzv::StoreTimeout& e) {
        throw CollectiveTimeout(std::string("init_process_group: ") + e.what());
    } catch (const rdzv::StoreError& e) {
        throw CollectiveError(std::string("init_process_group: store failure: ") + e.what());
    }
}

std::unique_ptr<ProcessGroup> init_process_group_from_environment(const InitOptions& options) {
    return init_process_group(run_context_from_env(env::from_environ(environ)), options);
}

}  // namespace ptrun::ddp
