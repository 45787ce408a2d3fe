#include <boost/asio/post.hpp>

#include "agent_impl.hpp"
#include "ptrun/env/worker_env.hpp"
#include "ptrun/launcher/output/duration_text.hpp"
#include "ptrun/launcher/output/printable.hpp"

namespace ptrun::launcher {
namespace asio = boost::asio;

std::string Agent::Impl::preload_list() const {
    std::string list;
    for (const auto& m : config.preload) list += (list.empty() ? "" : ",") + m;
    return list;
}

void Agent::Impl::start_preload() {
    if (config.preload.empty()) return;
    if (local.scheduled) {
        log->info(
            "--preload {}: not used in one-task-per-rank mode: each ptrun starts its one "
            "worker once, so there is no import to share",
            preload_list());
        return;
    }
    env::EnvMap env = parent_env;  // what every worker shares; libgomp reads this at import
    if (env::sets_omp_num_threads(parent_env, config.nproc_per_node)) env["OMP_NUM_THREADS"] = "1";
    SpawnRequest request{command.exec_path, command.zygote_argv(config.preload), std::move(env)};
    pass_worker_events(request);  // its workers inherit the channel, and it keeps it for them
    Zygote::Handlers on;
    on.ready = [this](double seconds) {
        log->info("preloaded {} in {} (zygote pid {}): workers are forked from it", preload_list(),
                  seconds_text(std::chrono::milliseconds(static_cast<long long>(seconds * 1000))),
                  zygote->pid());
        preload_settled();
    };
    on.unusable = [this](const std::string& why) {
        log->warn("--preload {}: {}{}; workers start as interpreters{}", preload_list(),
                  preload_loading ? "not used: " : "", printable(why),
                  preload_loading ? "" : " from now on");
        preload_settled();
    };
    on.import_failed = [this](const ImportFailure& f) {
        preload_loading = false;
        std::string text =
            "--preload: cannot import '" + printable(f.module) + "': " + printable(f.error);
        if (f.error.rfind("ModuleNotFoundError", 0) == 0) {
            text += " (the zygote runs " + command.interpreter + ", " + command.interpreter_origin +
                    ": set PYTHON_EXEC to an interpreter that has it)";
        } else if (!f.traceback.empty()) {
            text += "\n" + printable_lines(f.traceback);
        }
        log->error("{}", text);
        asio::post(io, [this] {
            if (!finished) finish(2);
        });
    };
    try {
        zygote = std::make_unique<Zygote>(io, *launcher, std::move(request), command.runner,
                                          std::move(on));
        preload_loading = true;
    } catch (const SpawnError& e) {
        log->warn(
            "--preload {}: not used: cannot start the zygote: {}; workers start as "
            "interpreters",
            preload_list(), e.what());
    }
}

void Agent::Impl::preload_settled() {
    preload_loading = false;
    record(Phase::PreloadSettled, -1, zygote && zygote->ready() ? "ready" : "not used");
    if (!start_waits) return;
    start_waits = false;
    asio::post(io, [this] {
        if (!finished) start_attempt();
    });
}

}  // namespace ptrun::launcher
