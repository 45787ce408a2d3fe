#include "ptrun/launcher/hosts/host_launch.hpp"

#include <array>

#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/hosts/remote_command.hpp"
#include "ptrun/launcher/output/printable.hpp"

namespace ptrun::launcher {
namespace {

/// Options of the launching ptrun alone, or set by it for each host: never forwarded as given.
constexpr std::array kNotForwarded{Option::Hosts,    Option::Hostfile,     Option::Include,
                                   Option::Exclude,  Option::RemoteShell,  Option::RemotePtrun,
                                   Option::Export,   Option::FromLauncher, Option::Nnodes,
                                   Option::NodeRank, Option::RdzvEndpoint, Option::RdzvId};

bool forwarded(Option key) {
    for (auto k : kNotForwarded) {
        if (k == key) return false;
    }
    return true;
}

std::string with_value(Option key, const std::string& value) {
    return flag_text(key) + "=" + value;
}

}  // namespace

bool wants_hosts(const LaunchOptions& options) {
    if (options.given(Option::FromLauncher)) return false;  // a host's ptrun: never a launcher
    return options.given(Option::Hosts) || options.given(Option::Hostfile) ||
           options.given(Option::Include) || options.given(Option::Exclude);
}

std::vector<HostEntry> selected_hosts(const LaunchOptions& options,
                                      const std::string& hostfile_text) {
    const bool list = options.given(Option::Hosts);
    const bool file = options.given(Option::Hostfile);
    if (list && file) {
        throw UsageError("--hosts and --hostfile both given; expected one of them");
    }
    if (!list && !file) {
        if (options.given(Option::Include) || options.given(Option::Exclude)) {
            throw UsageError("--include/--exclude: expected --hosts or --hostfile to choose from");
        }
        throw UsageError("expected --hosts or --hostfile");
    }
    auto hosts = list ? parse_host_list(options.at(Option::Hosts).value)
                      : parse_hostfile(hostfile_text, options.at(Option::Hostfile).value);
    return filter_hosts(std::move(hosts), options.at(Option::Include).value,
                        options.at(Option::Exclude).value);
}

HostsPlan make_hosts_plan(const LaunchOptions& options, const std::vector<HostEntry>& hosts,
                          const HostsContext& context) {
    for (auto key : {Option::Nnodes, Option::NodeRank, Option::FromLauncher}) {
        if (options.given(key)) {
            throw UsageError(as_given(key, options.at(key)) +
                             ": --hosts/--hostfile set it for each host (one node per host, node "
                             "ranks in host order); leave it out");
        }
    }
    if (options.given(Option::Standalone) && options.flag(Option::Standalone)) {
        throw UsageError("--standalone runs one node; --hosts/--hostfile run one node per host");
    }
    HostsPlan plan;
    plan.shell = split_command_words(options.at(Option::RemoteShell).value);
    std::string ptrun = options.given(Option::RemotePtrun) ? options.at(Option::RemotePtrun).value
                                                           : context.self_path;
    if (ptrun.empty() || ptrun.find('=') != std::string::npos) {
        throw UsageError("--remote-ptrun '" + printable(ptrun) +
                         "': expected the path of ptrun on the hosts (without '=')");
    }
    plan.run_id = options.given(Option::RdzvId) ? options.at(Option::RdzvId).value : context.run_id;
    plan.endpoint = options.given(Option::RdzvEndpoint) ? options.at(Option::RdzvEndpoint).value
                                                        : hosts.front().name();
    // The same options for every host, in table order, then the program and its arguments.
    std::vector<std::string> common;
    for (const auto& spec : option_table()) {
        const auto& raw = options.at(spec.key);
        if (raw.source != Source::Flag || !forwarded(spec.key)) continue;
        if (spec.kind == OptionKind::Flag) {
            if (options.flag(spec.key)) common.push_back(flag_text(spec.key));
        } else {
            common.push_back(with_value(spec.key, raw.value));
        }
    }
    if (!options.given(Option::RdzvBackend)) common.push_back("--rdzv-backend=c10d");
    // Every worker line names its host and rank ("[node2:3] "), as --tee prefixes them.
    if (!options.given(Option::Tee) && !options.given(Option::Redirects))
        common.push_back("--tee=3");
    common.push_back(with_value(Option::RdzvEndpoint, plan.endpoint));
    common.push_back(with_value(Option::RdzvId, plan.run_id));
    common.push_back(with_value(Option::Nnodes, std::to_string(hosts.size())));
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        RemoteAgentCommand command;
        command.directory = context.directory;
        command.env = context.env;
        command.argv = {ptrun, with_value(Option::FromLauncher, hosts[i].name())};
        command.argv.insert(command.argv.end(), common.begin(), common.end());
        command.argv.push_back(with_value(Option::NodeRank, std::to_string(i)));
        if (hosts[i].slots) {
            command.argv.push_back(
                with_value(Option::NprocPerNode, std::to_string(*hosts[i].slots)));
        }
        command.argv.push_back("--");
        command.argv.push_back(options.program);
        command.argv.insert(command.argv.end(), options.program_args.begin(),
                            options.program_args.end());
        plan.hosts.push_back(
            {hosts[i].name(),
             remote_shell_argv(plan.shell, hosts[i].host, remote_command_line(command)),
             {command.argv.begin() + 1, command.argv.end()}});
    }
    return plan;
}

}  // namespace ptrun::launcher
