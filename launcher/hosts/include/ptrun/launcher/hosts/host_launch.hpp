#pragma once
/// `ptrun --hosts/--hostfile`: from the command line as given to the command each host's ptrun
/// is started with. Host i is node rank i of a c10d rendezvous at the first host (or
/// --rdzv-endpoint), so GROUP_RANK follows the host order; the run id, the node count and, where
/// the list gives slots, --nproc-per-node are set for every host; the user's other options, the
/// program and its arguments go as given. Pure: reads nothing, starts nothing.

#include <string>
#include <vector>

#include "ptrun/launcher/cli/launch_options.hpp"
#include "ptrun/launcher/hosts/host_list.hpp"
#include "ptrun/launcher/hosts/remote_env.hpp"

namespace ptrun::launcher {

/// What the launching ptrun knows of itself, read by `main`.
struct HostsContext {
    std::string directory;  ///< its working directory: each host's ptrun runs in the same
    std::string self_path;  ///< its own executable: --remote-ptrun's default
    EnvPairs env;           ///< remote_env(): what every host's ptrun gets
    std::string run_id;     ///< used when --rdzv-id is not given (a fresh random id)
};

/// One host's remote shell command.
struct HostLaunch {
    std::string name;               ///< the node's name (HostEntry::name), its lines' prefix
    std::vector<std::string> argv;  ///< the remote shell, the host, the quoted command
    /// The host's ptrun command line, after ptrun's own path (what `argv` quotes): the launching
    /// ptrun checks it before any remote shell starts.
    std::vector<std::string> ptrun_args;
};

struct HostsPlan {
    std::vector<HostLaunch> hosts;   ///< in node-rank order
    std::vector<std::string> shell;  ///< --remote-shell's words
    std::string endpoint;            ///< the rendezvous every host meets at
    std::string run_id;              ///< --rdzv-id
};

/// True when the command line asks for --hosts or --hostfile.
bool wants_hosts(const LaunchOptions& options);

/// The hosts --hosts or --hostfile (text `hostfile_text`) name, after --include/--exclude.
/// Throws UsageError for both or neither given, and for what parse_* and filter_hosts refuse.
std::vector<HostEntry> selected_hosts(const LaunchOptions& options,
                                      const std::string& hostfile_text);

/// The plan for `hosts`; throws UsageError for options that --hosts sets itself (--nnodes,
/// --node-rank, --standalone, --from-launcher) or a bad --remote-shell / --remote-ptrun.
HostsPlan make_hosts_plan(const LaunchOptions& options, const std::vector<HostEntry>& hosts,
                          const HostsContext& context);

}  // namespace ptrun::launcher
