#pragma once
/// The command line as given: raw values, each with where it came from. `resolve` (config.hpp)
/// turns these into a validated LaunchConfig.

#include <array>
#include <string>
#include <vector>

#include "ptrun/launcher/cli/option.hpp"

namespace ptrun::launcher {

/// Where a value came from, for error messages and `--explain`. Slurm: inferred from the SLURM
/// job the option was left out in (slurm_defaults.hpp); LauncherEnv: from another launch
/// environment (MPI, Flux, PBS, LSF, Kubernetes: launcher_env_defaults.hpp). For both,
/// `RawValue::origin` names the variables.
enum class Source { Default, Flag, PetEnv, Slurm, LauncherEnv };

/// One raw option value.
struct RawValue {
    std::string value;
    Source source = Source::Default;
    /// Where it came from: Source::PetEnv the variable ("PET_MAX_RESTARTS"); Source::Slurm and
    /// Source::LauncherEnv the variables, e.g. "SLURM_STEP_NUM_NODES"
    std::string origin;
};

/// Every torchrun option (option.hpp), plus the program.
struct LaunchOptions {
    /// Every option at its default (option_table()'s fallback, Source::Default), no program.
    LaunchOptions();

    std::string program;                    ///< the script, module or executable
    std::vector<std::string> program_args;  ///< passed to the worker untouched

    /// The raw value of option `key`.
    const RawValue& at(Option key) const { return values_[static_cast<std::size_t>(key)]; }
    /// The raw value of option `key`, to replace (slurm_defaults.cpp fills from the job).
    RawValue& at(Option key) { return values_[static_cast<std::size_t>(key)]; }
    /// True when option `key` holds more than its default: a flag, a PET_ variable or SLURM set it.
    bool given(Option key) const { return at(key).source != Source::Default; }
    /// True when a boolean option is on ("1", "true", "yes", "True", as torchrun's env fallback);
    /// throws UsageError naming the flag (or its PET_ variable) for another value.
    bool flag(Option key) const;

  private:
    std::array<RawValue, kOptionCount> values_;  ///< indexed by Option
};

/// An option's value as the user gave it, for messages: "--nnodes '2'", with " (from PET_
/// environment)" when it came from there.
std::string as_given(Option key, const RawValue& raw);

}  // namespace ptrun::launcher
