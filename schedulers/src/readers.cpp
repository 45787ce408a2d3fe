#include <array>

#include "reader_table.hpp"

namespace ptrun::schedulers {

std::span<const Reader> readers() {
    static const std::array<Reader, 6> table{
        detail::mpi_reader(),   detail::lsf_reader(), detail::flux_reader(),
        detail::slurm_reader(), detail::pbs_reader(), detail::k8s_reader(),
    };
    return table;
}

const Reader& reader_for(LauncherKind kind) {
    for (const auto& r : readers()) {
        if (r.kind == kind) return r;
    }
    return readers().front();  // not reached: the table has every kind
}

const Reader* detect_reader(const env::EnvMap& env) {
    for (const auto& r : readers()) {
        if (r.found_by(env)) return &r;
    }
    return nullptr;
}

}  // namespace ptrun::schedulers
