#pragma once
/// The command line as given: raw values, each with where it came from. `resolve` (config.hpp)
/// turns these into a validated LaunchConfig.

#include <map>
#include <string>
#include <vector>

namespace ptrun::launcher {

/// Where a value came from, for error messages and `--explain`. Slurm: inferred from the SLURM
/// job the option was left out in (slurm_defaults.hpp); `RawValue::origin` names the variables.
enum class Source { Default, Flag, PetEnv, Slurm };

/// One raw option value.
struct RawValue {
    std::string value;
    Source source = Source::Default;
    std::string origin;  ///< Source::Slurm: the variables it came from, e.g. "SLURM_STEP_NUM_NODES"
};

/// Every torchrun option by its canonical dashed name ("nproc-per-node"), plus the program.
struct LaunchOptions {
    std::map<std::string, RawValue, std::less<>> values;  ///< every option, defaults filled in
    std::string program;                                  ///< the script, module or executable
    std::vector<std::string> program_args;                ///< passed to the worker untouched

    /// The raw value of option `name` (canonical dashed name); throws std::out_of_range if unknown.
    const RawValue& at(std::string_view name) const;
    /// True when a boolean option is on ("1", "true", "yes", "True", as torchrun's env fallback).
    bool flag(std::string_view name) const;
};

}  // namespace ptrun::launcher
