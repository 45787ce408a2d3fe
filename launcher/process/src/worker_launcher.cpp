#include "ptrun/launcher/process/worker_launcher.hpp"

namespace ptrun::launcher {

pid_t WorkerLauncher::launch_helper(SpawnRequest&, std::function<void(const WorkerExit&)>) {
    throw SpawnError("this launcher starts no helper processes");
}

}  // namespace ptrun::launcher
