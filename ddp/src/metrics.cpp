#include "ptrun/ddp/metrics.hpp"

#include <cstdint>
#include <vector>

namespace ptrun::ddp {
namespace {

/// FNV-1a over the names, each followed by a NUL: equal iff (almost surely) the name sets are.
std::int64_t names_fingerprint(const Metrics& m) {
    std::uint64_t h = 14695981039346656037ULL;
    for (const auto& [name, value] : m) {
        for (char ch : name) {
            h ^= static_cast<unsigned char>(ch);
            h *= 1099511628211ULL;
        }
        h *= 1099511628211ULL;  // the separator
    }
    return static_cast<std::int64_t>(h);
}

std::string names_of(const Metrics& m) {
    std::string out = "{";
    for (const auto& [name, value] : m) out += (out.size() > 1 ? ", " : "") + name;
    return out + "}";
}

}  // namespace

Metrics average_metrics(ProcessGroup& pg, const Metrics& local) {
    const auto world = static_cast<std::size_t>(pg.size());
    const std::int64_t mine[2] = {static_cast<std::int64_t>(local.size()),
                                  names_fingerprint(local)};
    std::vector<std::int64_t> all(2 * world);
    pg.allgather(mine, all.data(), 2, DType::Int64)->wait();
    for (std::size_t r = 0; r < world; ++r) {
        if (all[2 * r] != mine[0] || all[2 * r + 1] != mine[1]) {
            std::string msg = "average_metrics: rank " + std::to_string(r) + " has " +
                              std::to_string(all[2 * r]) + " metric names, rank " +
                              std::to_string(pg.rank()) + " has " + std::to_string(local.size()) +
                              " " + names_of(local) + "; every rank must pass the same names";
            throw MetricsMismatch(msg);
        }
    }
    std::vector<double> values;
    values.reserve(local.size());
    for (const auto& [name, value] : local) values.push_back(value);
    if (!values.empty()) {
        pg.allreduce(values.data(), values.size(), DType::Float64, ReduceOp::Sum)->wait();
    }
    Metrics out;
    std::size_t i = 0;
    for (const auto& [name, value] : local) out[name] = values[i++] / static_cast<double>(world);
    return out;
}

}  // namespace ptrun::ddp
