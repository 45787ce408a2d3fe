#pragma once
/// Which of several SLURM variables that say the same thing (variables.hpp: the step's first) a
/// value came from, for `--explain` and error messages.

#include <initializer_list>
#include <string>
#include <string_view>

#include "ptrun/env/env_map.hpp"

namespace ptrun::slurm {

/// The first of `names` set in `env` (the one slurm_job_from_env read), else the first name.
inline std::string first_set(const env::EnvMap& env,
                             std::initializer_list<std::string_view> names) {
    for (auto name : names) {
        if (env.find(name) != env.end()) return std::string(name);
    }
    return std::string(*names.begin());
}

}  // namespace ptrun::slurm
