#pragma once
/// The ranks of one node as threads: each gets the RunContext of local rank r of `n` (rank r,
/// world size n) and runs `body`; the exception each rank ended with, in rank order.

#include <exception>
#include <thread>
#include <vector>

#include "ptrun/ddp/init.hpp"

namespace ptrun::ddp::testing {

template <class Body>
std::vector<std::exception_ptr> run_node_ranks(int n, Body body) {
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
    std::vector<std::thread> ranks;
    for (int r = 0; r < n; ++r) {
        ranks.emplace_back([&errors, &body, r, n] {
            RunContext ctx;
            ctx.rank = r;
            ctx.world_size = n;
            ctx.local_rank = r;
            ctx.local_world_size = n;
            try {
                body(ctx);
            } catch (...) {
                errors[static_cast<std::size_t>(r)] = std::current_exception();
            }
        });
    }
    for (auto& t : ranks) t.join();
    return errors;
}

}  // namespace ptrun::ddp::testing
