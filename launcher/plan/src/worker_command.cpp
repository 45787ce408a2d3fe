#include "ptrun/launcher/plan/worker_command.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <utility>
#include <algorithm>
#include <filesystem>

#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/plan/local_rank_macro.hpp"

namespace ptrun::launcher {
namespace {

bool is_regular_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string require_executable(const std::string& name, const env::EnvMap& env,
                               const std::string& what) {
    bool not_executable = false;
    auto path =
        find_executable(name, env::lookup(env, "PATH").value_or("/usr/bin:/bin"), not_executable);
    if (!path.empty()) return path;
    if (not_executable)
        throw UsageError(what + " '" + name +
                         "': not executable (expected a file with execute permission)");
    throw UsageError(what + " '" + name + "': not found" +
                     (name.find('/') == std::string::npos ? " on PATH" : "") +
                     " (expected an executable file)");
}

}  // namespace

std::string find_executable(const std::string& name, const std::string& path_var,
                            bool& not_executable) {
    not_executable = false;
    auto usable = [&](const std::string& candidate) {
        if (!is_regular_file(candidate)) return false;
        if (::access(candidate.c_str(), X_OK) == 0) return true;
        not_executable = true;
        return false;
    };
    if (name.empty()) return "";
    if (name.find('/') != std::string::npos) return usable(name) ? name : "";
    std::string_view rest = path_var;
    while (true) {
        auto colon = rest.find(':');
        std::string dir(rest.substr(0, colon));
        std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (usable(candidate)) {
            not_executable = false;
            return candidate;
        }
        if (colon == std::string_view::npos) return "";
        rest = rest.substr(colon + 1);
    }
}

bool runs_python(const LaunchConfig& c) {
    bool is_script = c.program.size() > 3 && c.program.compare(c.program.size() - 3, 3, ".py") == 0;
    return !c.no_python && (c.module || is_script);
}

namespace {

std::string absolute(const std::string& path) {
    std::error_code ec;
    auto abs = std::filesystem::absolute(path, ec);
    return ec ? path : abs.lexically_normal().string();
}

/// The interpreter's name as configured, and where that choice came from.
std::pair<std::string, const char*> chosen_python(const env::EnvMap& env,
                                                  const Installation& installation) {
    if (auto exec = env::lookup(env, "PYTHON_EXEC")) return {*exec, "PYTHON_EXEC"};
    if (!installation.own_python.empty()) {
        return {installation.own_python, "the environment ptrun's wheel is installed in"};
    }
    return {"python3", "the first python3 on PATH"};
}

/// --preload forks workers from the runner: refuses a command that does not run through it.
void require_runner_for_preload(const LaunchConfig& c, const WorkerCommand& cmd) {
    if (!cmd.runner.empty()) return;
    const std::string what =
        "--preload: workers are forked from a Python interpreter that ptrun's "
        "runner keeps, but ";
    if (!runs_python(c)) {
        throw UsageError(what + "program '" + c.program +
                         "' is not run through Python (expected a .py script or -m MODULE, "
                         "without --no-python)");
    }
    if (c.no_runner) throw UsageError(what + "--no-runner turns the runner off");
    throw UsageError(what + "this ptrun has no runner installed (expected " +
                     "lib/ptrun/python/ptrun/_runner.py beside its bin/)");
}

}  // namespace

std::optional<Interpreter> find_interpreter(const LaunchConfig& c, const env::EnvMap& env,
                                            const Installation& installation) {
    if (!runs_python(c)) return std::nullopt;
    bool not_executable = false;
    const auto [python, origin] = chosen_python(env, installation);
    auto path =
        find_executable(python, env::lookup(env, "PATH").value_or("/usr/bin:/bin"), not_executable);
    return Interpreter{path.empty() ? "" : absolute(path), origin};
}

WorkerCommand make_worker_command(const LaunchConfig& c, const env::EnvMap& env,
                                  const Installation& installation) {
    WorkerCommand cmd;
    if (!runs_python(c)) {
        cmd.exec_path = require_executable(c.program, env, "program");
        cmd.argv.push_back(c.program);
        cmd.program_at = 1;  // torchrun leaves the entry point as it is
    } else {
        const auto [python, origin] = chosen_python(env, installation);
        cmd.exec_path = require_executable(python, env, "python interpreter");
        cmd.interpreter = absolute(cmd.exec_path);
        cmd.interpreter_origin = origin;
        if (!c.module && !is_regular_file(c.program)) {
            throw UsageError("program '" + c.program + "': not found (expected a Python script)");
        }
        cmd.argv = {python, "-u"};
        if (!c.no_runner && !installation.runner.empty()) {
            cmd.runner = installation.runner;
            cmd.argv.push_back(cmd.runner);
            if (!c.module) cmd.argv.push_back("--");
        }
        if (c.module) cmd.argv.push_back("-m");
        cmd.program_at = cmd.argv.size();  // torchrun's macro reaches the script's path too
        cmd.argv.push_back(c.program);
    }
    cmd.argv.insert(cmd.argv.end(), c.program_args.begin(), c.program_args.end());
    if (!c.preload.empty()) require_runner_for_preload(c, cmd);
    return cmd;
}

std::vector<std::string> WorkerCommand::argv_for(int local_rank) const {
    std::vector<std::string> out = argv;
    for (std::size_t i = program_at; i < out.size(); ++i)
        out[i] = substitute_local_rank(out[i], local_rank);
    return out;
}

std::vector<std::string> WorkerCommand::zygote_argv(const std::vector<std::string>& modules) const {
    std::vector<std::string> out = argv;
    auto at = std::find(out.begin(), out.end(), runner);
    if (runner.empty() || at == out.end()) return {};
    std::string list;
    for (const auto& m : modules) list += (list.empty() ? "" : ",") + m;
    out.insert(at + 1, {"--zygote", list});
    return out;
}

}  // namespace ptrun::launcher
