#include "ptrun/launcher/explain.hpp"

#include "ptrun/launcher/cli.hpp"

namespace ptrun::launcher {
namespace {

std::string source_of(const LaunchOptions& o, std::string_view name) {
    switch (o.at(name).source) {
        case Source::Flag:
            return "flag --" + std::string(name);
        case Source::PetEnv:
            return "env " + pet_name(name);
        case Source::Default:
            break;
    }
    return "default";
}

void row(std::string& out, const std::string& what, const std::string& value, const std::string& from) {
    out += what;
    out.append(what.size() < 18 ? 18 - what.size() : 1, ' ');
    out += value;
    out.append(value.size() < 24 ? 24 - value.size() : 1, ' ');
    out += "(" + from + ")\n";
}

}  // namespace

std::string explain(const LaunchConfig& c, const LaunchOptions& o) {
    std::string out;
    row(out, "nodes", std::to_string(c.nnodes.min) + ":" + std::to_string(c.nnodes.max), source_of(o, "nnodes"));
    row(out, "node rank", std::to_string(c.node_rank), source_of(o, "node-rank"));
    row(out, "workers per node", std::to_string(c.nproc_per_node), source_of(o, "nproc-per-node"));
    row(out, "world size", std::to_string(c.nproc_per_node * c.nnodes.min), "nodes x workers per node");
    row(out, "rdzv backend", c.rdzv_backend, c.standalone ? "--standalone" : source_of(o, "rdzv-backend"));
    row(out, "rdzv endpoint", c.rdzv_endpoint.empty() ? "(local)" : c.rdzv_endpoint, source_of(o, "rdzv-endpoint"));
    row(out, "run id", c.run_id, c.standalone && o.at("rdzv-id").source == Source::Default ? "random (--standalone)"
                                                                                          : source_of(o, "rdzv-id"));
    row(out, "store", c.master_addr + ":" + (c.master_port ? std::to_string(*c.master_port) : "<free port>"),
        source_of(o, "master-port"));
    row(out, "max restarts", std::to_string(c.max_restarts), source_of(o, "max-restarts"));
    row(out, "mode", "one agent per node", "default");
    row(out, "program", c.program.empty() ? "(none)" : c.program, "command line");
    return out;
}

}  // namespace ptrun::launcher
