#include "ptrun/ddp/resync.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>

namespace ptrun::ddp {

Resynced resync_state(ProcessGroup& pg, TrainingPosition mine,
                      const std::vector<std::span<float>>& buffers) {
    std::int64_t total = 0;
    for (const auto& b : buffers) total += static_cast<std::int64_t>(b.size());
    // One allgather of (steps, floats) per rank: every rank elects the same source from it.
    const std::int64_t local[2] = {mine.step, total};
    std::vector<std::int64_t> all(2 * static_cast<std::size_t>(pg.size()));
    pg.allgather(local, all.data(), 2, DType::Int64)->wait();
    Resynced out;
    out.position.step = -1;
    for (int r = 0; r < pg.size(); ++r) {
        const std::int64_t step = all[2 * static_cast<std::size_t>(r)];
        const std::int64_t floats = all[2 * static_cast<std::size_t>(r) + 1];
        if (floats != total) {
            throw std::invalid_argument("resync_state: rank " + std::to_string(r) + " passed " +
                                        std::to_string(floats) + " floats, rank " +
                                        std::to_string(pg.rank()) + " " + std::to_string(total));
        }
        if (step > out.position.step) {
            out.position.step = step;
            out.source = r;
        }
    }
    if (out.position.step < 0) {
        throw std::runtime_error("resync_state: no rank of " + std::to_string(pg.size()) +
                                 " holds training state (every rank passed step -1)");
    }
    // Staged: the state travels in one packed copy and lands in `buffers` only after every
    // broadcast succeeded, so a resync that fails leaves each rank's state as it was.
    std::int64_t position[2] = {mine.epoch, mine.step};
    std::vector<float> packed(static_cast<std::size_t>(total));
    if (pg.rank() == out.source) {
        auto at = packed.begin();
        for (const auto& b : buffers) at = std::copy(b.begin(), b.end(), at);
    }
    std::vector<WorkPtr> works{pg.broadcast(position, 2, DType::Int64, out.source)};
    if (!packed.empty()) {
        works.push_back(pg.broadcast(packed.data(), packed.size(), DType::Float32, out.source));
    }
    // Wait for all before leaving, even after a failure: the buffers live on this stack.
    std::exception_ptr first;
    for (auto& w : works) {
        try {
            w->wait();
        } catch (...) {
            if (!first) first = std::current_exception();
        }
    }
    if (first) std::rethrow_exception(first);
    auto at = packed.begin();
    for (const auto& b : buffers) {
        std::copy_n(at, b.size(), b.begin());
        at += static_cast<std::ptrdiff_t>(b.size());
    }
    out.position = {.epoch = position[0], .step = position[1]};
    return out;
}

}  // namespace ptrun::ddp
