#include "ptrun/launcher/cli/launcher_env_defaults.hpp"

#include <utility>

#include "environment_defaults.hpp"
#include "ptrun/launcher/cli/launcher_env.hpp"
#include "ptrun/launcher/cli/slurm_defaults.hpp"
#include "ptrun/launcher/cli/slurm_mode.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/schedulers/reader.hpp"

namespace ptrun::launcher {
namespace {

using schedulers::LauncherKind;

/// Records the environment used in "launcher-env": its name replaces a given "auto".
void set_env(LaunchOptions& o, std::string_view name, std::string why) {
    auto& raw = o.at(Option::LauncherEnv);
    if (o.given(Option::LauncherEnv)) {
        raw.value = std::string(name);
        return;
    }
    raw = RawValue{std::string(name), Source::LauncherEnv, std::move(why)};
}

/// SLURM, or nothing (apply_slurm_defaults says why: not inside SLURM, salloc's shell).
LaunchDefaults apply_slurm(LaunchOptions options, const env::EnvMap& env, bool forced) {
    if (forced && env.find("SLURM_JOB_ID") == env.end()) {
        throw UsageError(as_given(Option::LauncherEnv, options.at(Option::LauncherEnv)) +
                         ": SLURM_JOB_ID unset: not inside a SLURM job");
    }
    auto slurm = apply_slurm_defaults(std::move(options), env);
    LaunchDefaults out{std::move(slurm.options), std::move(slurm.placement),
                       std::move(slurm.warnings)};
    const bool used = out.options.at(Option::SlurmMode).value != "off";
    set_env(out.options, used ? "slurm" : "off",
            used ? "SLURM_JOB_ID" : "no launch environment found; man ptrun: LAUNCH ENVIRONMENTS");
    return out;
}

}  // namespace

LaunchDefaults apply_launcher_env(LaunchOptions options, const env::EnvMap& env,
                                  const ReadHostFile& read_host_file) {
    using Mode = LauncherEnvChoice::Mode;
    const auto choice = parse_launcher_env(options.at(Option::LauncherEnv));
    parse_slurm_mode(options.at(Option::SlurmMode));  // a bad --slurm-mode is refused anywhere
    if (choice.mode == Mode::Off) {
        if (!options.given(Option::SlurmMode)) {
            options.at(Option::SlurmMode) =
                RawValue{"off", Source::LauncherEnv,
                         as_given(Option::LauncherEnv, options.at(Option::LauncherEnv))};
        }
        return LaunchDefaults{std::move(options), std::nullopt, {}};
    }
    const schedulers::Reader* reader = choice.mode == Mode::Forced
                                           ? &schedulers::reader_for(choice.kind)
                                           : schedulers::detect_reader(env);
    if (!reader || reader->kind == LauncherKind::Slurm)
        return apply_slurm(std::move(options), env, choice.mode == Mode::Forced);

    const std::string found = reader->found_by(env).value_or(
        as_given(Option::LauncherEnv, options.at(Option::LauncherEnv)));
    auto out = detail::fill_from_environment(std::move(options), env, *reader, read_host_file);
    set_env(out.options, schedulers::launcher_kind_name(reader->kind), found);
    return out;
}

}  // namespace ptrun::launcher
