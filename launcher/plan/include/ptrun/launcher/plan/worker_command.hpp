#pragma once
/// Turns the program of a launch into the exact argv each worker execs (no shell).

#include <optional>
#include <string>
#include <vector>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/plan/installation.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

namespace ptrun::launcher {

/// An executable resolved to a path, with its full argv (argv[0] as the user would expect).
struct WorkerCommand {
    std::string exec_path;
    std::vector<std::string> argv;
    std::string interpreter;         ///< Python workers: the interpreter's absolute path, else ""
    std::string interpreter_origin;  ///< "PYTHON_EXEC" or "the first python3 on PATH"
    std::string runner;              ///< the Python runner in argv, "" when workers run without it
    /// argv[program_at...] are the user's (the script or module and its arguments; a program's
    /// arguments): where torchrun's `${local_rank}` is replaced.
    std::size_t program_at = 0;

    /// The argv of local rank `local_rank`'s worker: argv with `${local_rank}` replaced in the
    /// user's part (local_rank_macro.hpp).
    std::vector<std::string> argv_for(int local_rank) const;

    /// The zygote's argv for --preload: this argv with `--zygote MODULES` after the runner
    /// (the runner then imports MODULES and forks workers on request); empty without a runner.
    std::vector<std::string> zygote_argv(const std::vector<std::string>& modules) const;
};

/// The interpreter a Python PROGRAM runs with and where that choice came from ($PYTHON_EXEC, else
/// the interpreter of the environment ptrun's wheel was installed into, else the first python3
/// on PATH; as an absolute path), or nullopt when PROGRAM is not run through Python. `path` is ""
/// when the interpreter cannot be found.
struct Interpreter {
    std::string path;
    std::string origin;
};
std::optional<Interpreter> find_interpreter(const LaunchConfig& config, const env::EnvMap& env,
                                            const Installation& installation = {});

/// Whether the program runs through Python (a .py script or -m MODULE, without --no-python): only
/// then does make_worker_command look at the installation.
bool runs_python(const LaunchConfig& config);

/// `PROGRAM.py` -> python3 -u RUNNER -- PROGRAM.py; `-m mod` -> python3 -u RUNNER -m mod, or
/// without the runner (--no-runner, or none installed) python3 -u PROGRAM.py / python3 -u -m mod;
/// anything else, or with --no-python, is exec'd directly. The interpreter is find_interpreter's.
/// Throws UsageError when the program or interpreter is missing or not executable, or when
/// --preload is given for a command that does not run through the runner.
WorkerCommand make_worker_command(const LaunchConfig& config, const env::EnvMap& env,
                                  const Installation& installation = {});

/// Finds `name` on `path_var` (or takes it as a path if it has a '/'); returns "" if not found.
/// Sets `not_executable` when a match exists but lacks execute permission.
std::string find_executable(const std::string& name, const std::string& path_var,
                            bool& not_executable);

}  // namespace ptrun::launcher
