#include "ptrun/slurm/slurm_job.hpp"

#include <utility>
#include <algorithm>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <string_view>

#include "ptrun/env/cuda_devices.hpp"
#include "ptrun/slurm/hostlist.hpp"
#include "ptrun/slurm/tasks_per_node.hpp"
#include "ptrun/slurm/variables.hpp"

namespace ptrun::slurm {
namespace {

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr std::int64_t kMaxNodes = static_cast<std::int64_t>(kMaxHosts);
constexpr std::int64_t kMaxCpusOnNode = 1 << 20;

/// A variable that is set: its name (which of the alternatives it was) and its value.
struct Found {
    std::string_view name;
    std::string value;

    /// "NAME='value'", the subject of every error about this variable.
    std::string subject() const { return std::string(name) + "='" + value + "'"; }
};

/// The first of `names` that is set in `env`.
std::optional<Found> first_of(const env::EnvMap& env,
                              std::initializer_list<std::string_view> names) {
    for (auto name : names) {
        auto it = env.find(name);
        if (it != env.end()) return Found{name, it->second};
    }
    return std::nullopt;
}

std::string joined(std::initializer_list<std::string_view> names) {
    std::string text;
    for (auto name : names) {
        if (!text.empty()) text.append(" / ");
        text.append(name);
    }
    return text;
}

class JobReader {
  public:
    JobReader(const env::EnvMap& env, Found job_id) : env_(env), job_id_(std::move(job_id)) {}

    SlurmJob read() {
        SlurmJob job;
        job.job_id = static_cast<std::uint32_t>(to_int(job_id_, 0, 0xFFFFFFFF));
        if (auto step = first_of(env_, {var::kStepId, var::kStepIdOld})) {
            job.step_id = static_cast<std::uint32_t>(to_int(*step, 0, 0xFFFFFFFF));
        }

        Found list = required({var::kStepNodeList, var::kJobNodeList, var::kNodeList});
        job.nodes = hosts_of(list);
        auto num_nodes = first_of(env_, {var::kStepNumNodes, var::kNNodes, var::kJobNumNodes});
        job.num_nodes =
            num_nodes ? as_int(*num_nodes, 1, kMaxNodes) : static_cast<int>(job.nodes.size());
        if (num_nodes && job.nodes.size() != static_cast<std::size_t>(job.num_nodes)) {
            throw ParseError(list.subject(), "lists " + std::to_string(job.nodes.size()) +
                                                 " hosts but " + num_nodes->subject());
        }

        Found per_node = required({var::kStepTasksPerNode, var::kTasksPerNode});
        job.tasks_per_node = counts_of(per_node);
        if (job.tasks_per_node.size() != job.nodes.size()) {
            throw ParseError(per_node.subject(),
                             "gives " + std::to_string(job.tasks_per_node.size()) + " nodes but " +
                                 list.subject() + " lists " + std::to_string(job.nodes.size()));
        }
        int sum = std::accumulate(job.tasks_per_node.begin(), job.tasks_per_node.end(), 0);
        auto ntasks = first_of(env_, {var::kStepNumTasks, var::kNTasks, var::kNProcs});
        job.ntasks = ntasks ? as_int(*ntasks, 1, kIntMax) : sum;
        if (job.ntasks != sum) {
            throw ParseError(ntasks->subject(), "but " + per_node.subject() + " adds up to " +
                                                    std::to_string(sum) + " tasks");
        }

        Found node_id = required({var::kNodeId});
        job.node_id = as_int(node_id, 0, kMaxNodes - 1);
        if (job.node_id >= job.num_nodes) {
            throw ParseError(node_id.subject(), "is not below the " +
                                                    std::to_string(job.num_nodes) + " nodes of " +
                                                    list.subject());
        }
        Found proc_id = required({var::kProcId});
        job.proc_id = as_int(proc_id, 0, kIntMax - 1);
        if (job.proc_id >= job.ntasks) {
            throw ParseError(proc_id.subject(), "is not below the " + std::to_string(job.ntasks) +
                                                    " tasks of the step");
        }
        Found local_id = required({var::kLocalId});
        job.local_id = as_int(local_id, 0, kMaxTasksPerNode - 1);
        int here = job.tasks_per_node[static_cast<std::size_t>(job.node_id)];
        if (job.local_id >= here) {
            throw ParseError(local_id.subject(), "is not below the " + std::to_string(here) +
                                                     " tasks that " + per_node.subject() +
                                                     " gives node " + std::to_string(job.node_id));
        }

        if (auto gpus = first_of(env_, {var::kGpusOnNode})) {
            job.gpus_on_node = as_int(*gpus, 0, kMaxNodes);
        }
        if (auto cuda = first_of(env_, {var::kCudaVisibleDevices})) {
            job.cuda_visible_devices =
                static_cast<int>(env::parse_cuda_visible_devices(cuda->value).size());
        }
        if (auto cpus = first_of(env_, {var::kCpusOnNode})) {
            job.cpus_on_node = as_int(*cpus, 1, kMaxCpusOnNode);
        }
        return job;
    }

  private:
    Found required(std::initializer_list<std::string_view> names) const {
        if (auto found = first_of(env_, names)) return *found;
        throw ParseError(joined(names),
                         "not set, though " + job_id_.subject() +
                             " is: run ptrun in a batch script or an srun step (not in salloc's "
                             "command on a login node)");
    }

    static std::int64_t to_int(const Found& f, std::int64_t min, std::int64_t max) {
        auto value = env::parse_int(f.value);
        if (!value || *value < min || *value > max) {
            throw ParseError(f.subject(), "expected an integer from " + std::to_string(min) +
                                              " to " + std::to_string(max));
        }
        return *value;
    }

    static int as_int(const Found& f, std::int64_t min, std::int64_t max) {
        return static_cast<int>(to_int(f, min, max));
    }

    static std::vector<std::string> hosts_of(const Found& list) {
        std::vector<std::string> hosts;
        try {
            hosts = expand_hostlist(list.value);
        } catch (const ParseError& e) {
            throw ParseError(list.subject(), e.reason, e.pos);
        }
        if (hosts.empty()) throw ParseError(list.subject(), "lists no host");
        std::set<std::string_view> seen;
        for (const auto& host : hosts) {
            if (!seen.insert(host).second) {
                throw ParseError(list.subject(), "lists host '" + host + "' twice");
            }
        }
        return hosts;
    }

    static std::vector<int> counts_of(const Found& per_node) {
        try {
            return parse_tasks_per_node(per_node.value);
        } catch (const ParseError& e) {
            throw ParseError(per_node.subject(), e.reason, e.pos);
        }
    }

    const env::EnvMap& env_;
    Found job_id_;
};

}  // namespace

std::optional<SlurmJob> slurm_job_from_env(const env::EnvMap& env) {
    auto job_id = first_of(env, {var::kJobId});
    if (!job_id) return std::nullopt;
    return JobReader(env, std::move(*job_id)).read();
}

}  // namespace ptrun::slurm
