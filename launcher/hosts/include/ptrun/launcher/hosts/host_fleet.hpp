#pragma once
/// The launching ptrun of --hosts/--hostfile: one remote shell per host, supervised on one event
/// loop (their pipes and pidfds, its signals, two deadlines; nothing polls). Each remote shell
/// gets a pipe as stdin whose write end only this process holds: closing it (a host's failure,
/// or this process ending in any way, kill -9 included) is how every host's ptrun learns to
/// stop; a signal this process receives goes down it as one byte that each host's ptrun raises
/// (launcher_pipe_relay.hpp), so that a second Ctrl-C kills the workers as on one node.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ptrun/launcher/hosts/host_launch.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

struct Console;

struct FleetOptions {
    /// A host whose ptrun has not said it started by then failed to start (an ssh that hangs
    /// on connect): its remote shell is killed and the job stopped.
    std::chrono::milliseconds start_deadline{std::chrono::seconds(60)};
    /// After a stop, remote shells still running this much later are killed (SIGKILL to their
    /// process group); the hosts' ptruns see their pipe close all the same.
    std::chrono::milliseconds stop_deadline{std::chrono::seconds(90)};
    std::vector<std::string> env;  ///< the remote shells' environment, "NAME=value"
    std::string shell_text;        ///< --remote-shell as given, for messages
};

/// Runs `plan` to its end and returns the job's exit code: 0 when every host's ptrun exited 0;
/// else the first failing host's code (its failure report came with its lines); 128+signal when
/// SIGINT, SIGTERM or SIGHUP stopped it. A host whose ptrun never started (an unknown name, a
/// refused login, no ptrun there) is one error line naming it and its remote shell's last words,
/// and every other host is stopped. Blocks; handles those signals while it runs.
int run_host_fleet(const HostsPlan& plan, const FleetOptions& options,
                   const std::shared_ptr<Console>& console,
                   const std::shared_ptr<spdlog::logger>& log);

}  // namespace ptrun::launcher
