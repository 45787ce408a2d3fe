#include "ptrun/launcher/process/worker_launcher.hpp"

namespace ptrun::launcher {

pid_t WorkerLauncher::launch_helper(SpawnRequest&, std::function<void(const WorkerExit&)>) {
    throw SpawnError("this launcher starts no helper processes");
}

std::uint64_t WorkerLauncher::fork_worker(ForkServer&, SpawnRequest&, std::function<void(pid_t)>) {
    return 0;
}

LiveUsage WorkerLauncher::usage_now(pid_t pid) const { return read_process_usage(pid); }

}  // namespace ptrun::launcher
