#include "ptrun/launcher/plan/local_placement.hpp"

#include "ptrun/env/names.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/process/environment_error.hpp"
#include "ptrun/placement/placement_error.hpp"
#include "ptrun/placement/topology.hpp"

namespace ptrun::launcher {
namespace {

/// The GPUs the planner binds near, in the workers' device order; empty (with a warning) when
/// the driver cannot say where they are.
std::vector<placement::GpuPlace> gpu_places(const std::vector<env::CudaDevice>& devices,
                                            const PlacementSources& sources,
                                            std::vector<std::string>& warnings) {
    if (devices.empty()) return {};
    std::string why;
    auto ids = sources.open_gpus(why);
    if (!ids) {
        warnings.push_back("--numa-binding: cannot find where the devices (" +
                           env::cuda_visible_devices_value(devices) + ") are: " + why +
                           "; binding the workers as CPU-only ones");
        return {};
    }
    return placement::locate_gpus(devices, *ids, sources.sys);
}

void plan_bindings(LocalPlacement& plan, const LaunchConfig& c,
                   const std::vector<env::CudaDevice>& devices, const PlacementSources& sources) {
    placement::Topology topology;
    placement::ProcessLimits limits;
    try {
        topology = placement::read_topology(sources.sys);
        limits = sources.limits();
    } catch (const placement::PlacementError& e) {
        throw EnvironmentError("--numa-binding: cannot read this machine's topology: " +
                               std::string(e.what()));
    }
    placement::BindingRequest request;
    request.mode = *c.numa_binding;
    request.workers = c.nproc_per_node;
    request.allowed_cpus = limits.cpus;
    request.allowed_mems = limits.mems;
    try {
        request.gpus = gpu_places(devices, sources, plan.warnings);
        auto bindings = placement::plan_bindings(topology, request);
        for (std::size_t i = 0; i < bindings.size(); ++i) {
            plan.workers[i].prepared = placement::prepare_binding(bindings[i]);
            plan.workers[i].binding = std::move(bindings[i]);
        }
    } catch (const placement::PlacementError& e) {
        throw UsageError(e.what());
    }
}

}  // namespace

PlacementSources placement_sources(const HostFacts& host, env::DeviceKind kind) {
    PlacementSources s;
    s.sys = host.device_root / "sys";
    if (kind == env::DeviceKind::NvidiaGpu) return s;
    placement::FoundDevices found;
    found.kind = kind;
    for (const auto& a : host.accelerators) {
        if (a.found.kind == kind) found = a.found;
    }
    s.open_gpus = [found](std::string& why) { return placement::found_bus_ids(found, why); };
    return s;
}

LocalPlacement plan_local_placement(const LaunchConfig& c,
                                    const std::vector<env::CudaDevice>& visible,
                                    const env::EnvMap& env, const PlacementSources& sources) {
    LocalPlacement plan;
    plan.workers.resize(static_cast<std::size_t>(c.nproc_per_node));
    plan.virtual_local_rank = c.virtual_local_rank;
    plan.kind = c.device_kind;
    plan.visible = visible;
    const bool selected = !c.gpu_selection.empty();
    const auto& devices = selected ? c.gpu_selection : visible;
    bool names_ordinals = false;
    if (selected || (c.virtual_local_rank && !devices.empty())) {
        try {
            for (int lr = 0; lr < c.nproc_per_node; ++lr) {
                plan.workers[static_cast<std::size_t>(lr)].visible_devices =
                    env::worker_cuda_visible_devices(devices, lr, c.virtual_local_rank);
            }
        } catch (const env::ParseError& e) {
            throw UsageError(std::string("--virtual-local-rank: ") + e.what());
        }
        for (const auto& d : devices) names_ordinals = names_ordinals || d.ordinal.has_value();
    }
    if (c.numa_binding) {
        plan_bindings(plan, c, devices, sources);
        names_ordinals = names_ordinals || !devices.empty();
    }
    if (names_ordinals && plan.kind == env::DeviceKind::NvidiaGpu &&
        !env::lookup(env, "CUDA_DEVICE_ORDER")) {
        plan.cuda_device_order = "PCI_BUS_ID";
    }
    return plan;
}

void apply_to_env(const LocalPlacement& plan, int local_rank, env::EnvMap& worker_env) {
    if (plan.virtual_local_rank) worker_env[std::string(env::names::kLocalRank)] = "0";
    if (plan.cuda_device_order) worker_env["CUDA_DEVICE_ORDER"] = *plan.cuda_device_order;
    if (static_cast<std::size_t>(local_rank) >= plan.workers.size()) return;
    const auto& slot = plan.workers[static_cast<std::size_t>(local_rank)];
    if (slot.visible_devices)
        worker_env[std::string(env::visibility_variable(plan.kind))] = *slot.visible_devices;
}

std::string worker_gpus(const LocalPlacement& plan, const env::EnvMap& worker_env) {
    if (auto name = env::visibility_variable_set(plan.kind, worker_env)) {
        return env::cuda_visible_devices_value(
            env::parse_visible_devices(plan.kind, *env::lookup(worker_env, *name)));
    }
    return env::cuda_visible_devices_value(plan.visible);
}

std::vector<ExplainRow> explain_rows(const LocalPlacement& plan, const LaunchConfig& c,
                                     const env::EnvMap& env) {
    std::vector<ExplainRow> rows;
    const std::string torch(env::torch_name(plan.kind));
    const auto inherited_var = env::visibility_variable_set(plan.kind, env);
    std::string gpus_from =
        !c.gpu_selection.empty()  ? "--nproc-per-node " + torch + ":LIST"
        : plan.virtual_local_rank ? "--virtual-local-rank"
        : inherited_var           ? "inherited " + *inherited_var
                        : std::string(env::visibility_variable(plan.kind)) + " unset: every " +
                              std::string(env::device_noun(plan.kind)) + " of this node";
    if (plan.kind == env::DeviceKind::NvidiaGpu && !inherited_var && c.gpu_selection.empty() &&
        !plan.virtual_local_rank)
        gpus_from = "CUDA_VISIBLE_DEVICES unset: every GPU of this node";
    if ((!c.gpu_selection.empty() || plan.virtual_local_rank) &&
        plan.kind != env::DeviceKind::NvidiaGpu)
        gpus_from += " (" + std::string(env::visibility_variable(plan.kind)) + ")";
    if (plan.virtual_local_rank) gpus_from += ", LOCAL_RANK=0";
    std::string binding_from =
        c.numa_binding ? "--numa-binding " + placement::to_text(*c.numa_binding) : "inherited";
    std::string first_of_run;  // the first local rank of the row being extended
    const std::string inherited = worker_gpus(plan, env);  // once: it may list 4,096 devices
    for (std::size_t lr = 0; lr < plan.workers.size(); ++lr) {
        const auto& slot = plan.workers[lr];
        // What apply_to_env gives the worker: the slot's own devices, else ptrun's.
        const std::string gpus = slot.visible_devices
                                     ? env::cuda_visible_devices_value(env::parse_visible_devices(
                                           plan.kind, *slot.visible_devices))
                                     : inherited;
        std::string value = torch + "s " + (gpus.empty() ? std::string("none") : gpus);
        if (slot.binding) {
            value +=
                ", cpus " + placement::to_list(slot.binding->cpus) + ", memory " +
                (slot.binding->mems.empty() ? std::string("default")
                                            : "node " + placement::to_list(slot.binding->mems));
        } else {
            value += ", cpus inherited";
        }
        const std::string from = gpus_from + "; " + binding_from;
        // Consecutive local ranks that get the same are one row ("local ranks 0-4095"): the
        // output grows with the workers, not with workers times GPUs.
        if (!rows.empty() && rows.back().value == value && rows.back().from == from && lr > 0) {
            rows.back().what = "local ranks " + first_of_run + "-" + std::to_string(lr);
            continue;
        }
        first_of_run = std::to_string(lr);
        rows.push_back({"local rank " + first_of_run, value, from});
    }
    if (plan.cuda_device_order) {
        rows.push_back({"CUDA_DEVICE_ORDER", *plan.cuda_device_order,
                        "set by ptrun: ordinals in PCI bus order, as nvidia-smi and NVML"});
    }
    return rows;
}

}  // namespace ptrun::launcher
