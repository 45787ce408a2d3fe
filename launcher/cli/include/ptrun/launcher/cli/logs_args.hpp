#pragma once
/// The command line of `ptrun logs HOST:PORT [--rank R[,R...]] [--tail N] [--follow]`.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ptrun::launcher {

struct LogsArgs {
    std::string host;
    std::uint16_t port = 0;
    std::vector<int> ranks;  ///< empty: every rank
    std::size_t tail = 0;    ///< 0: the endpoint's default (100 lines per rank)
    bool follow = false;     ///< --follow, -f: new lines until the job ends
};

/// Parses `args` (args[0] is "logs"), --tail up to `max_tail`; throws UsageError naming what is
/// wrong.
LogsArgs parse_logs_args(const std::vector<std::string>& args, std::size_t max_tail);

}  // namespace ptrun::launcher
