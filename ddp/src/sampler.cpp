#include "ptrun/ddp/sampler.hpp"

#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace ptrun::ddp {
namespace {

/// Uniform integer in [0, bound) by rejection: std::uniform_int_distribution is not specified
/// exactly by the standard, std::mt19937_64's output is.
std::uint64_t uniform_below(std::mt19937_64& gen, std::uint64_t bound) {
    const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                                std::numeric_limits<std::uint64_t>::max() % bound;
    std::uint64_t x = gen();
    while (x >= limit) x = gen();
    return x % bound;
}

}  // namespace

std::vector<std::size_t> seeded_permutation(std::size_t n, std::uint64_t seed) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937_64 gen(seed);
    for (std::size_t i = n; i > 1; --i) {
        const auto j = static_cast<std::size_t>(uniform_below(gen, i));
        std::swap(order[i - 1], order[j]);
    }
    return order;
}

DistributedSampler::DistributedSampler(const SamplerOptions& options) : options_(options) {
    if (options.world_size < 1) {
        throw std::invalid_argument("DistributedSampler: world_size=" +
                                    std::to_string(options.world_size) + ", expected >= 1");
    }
    if (options.rank < 0 || options.rank >= options.world_size) {
        throw std::invalid_argument("DistributedSampler: rank=" + std::to_string(options.rank) +
                                    ", expected in [0, " + std::to_string(options.world_size) +
                                    ")");
    }
    const auto world = static_cast<std::size_t>(options.world_size);
    const std::size_t n = options.dataset_size;
    num_samples_ = options.drop_last ? n / world : (n + world - 1) / world;
}

std::vector<std::size_t> DistributedSampler::epoch_order() const {
    const std::size_t n = options_.dataset_size;
    std::vector<std::size_t> order;
    if (options_.shuffle) {
        order = seeded_permutation(n, options_.seed + epoch_);
    } else {
        order.resize(n);
        std::iota(order.begin(), order.end(), std::size_t{0});
    }
    const std::size_t total = total_size();
    if (total <= n) {
        order.resize(total);  // drop_last: the tail goes
        return order;
    }
    // Pad by wrapping around the epoch order, as often as needed (torch repeats the list).
    order.reserve(total);
    for (std::size_t i = 0; order.size() < total; ++i) order.push_back(order[i % n]);
    return order;
}

std::vector<std::size_t> DistributedSampler::indices() const {
    const auto order = epoch_order();
    std::vector<std::size_t> mine;
    mine.reserve(num_samples_);
    for (std::size_t i = static_cast<std::size_t>(options_.rank); i < order.size();
         i += static_cast<std::size_t>(options_.world_size)) {
        mine.push_back(order[i]);
    }
    return mine;
}

}  // namespace ptrun::ddp
