#pragma once
/// DistributedSampler: which dataset indices one rank visits in one epoch (torch's semantics).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ptrun::ddp {

/// What to sample and who this rank is. The same options on every rank except `rank`.
struct SamplerOptions {
    std::size_t dataset_size = 0;
    int rank = 0;
    int world_size = 1;
    std::uint64_t seed = 0;
    bool shuffle = true;
    /// false: pad the index list by wrapping around so every rank gets the same count;
    /// true: drop the tail that does not divide evenly.
    bool drop_last = false;
};

/// Splits [0, dataset_size) across ranks. With shuffle, every rank computes the same permutation
/// from seed + epoch (a fixed, portable generator), then takes every world_size-th index from
/// `rank`. So the first k*world_size positions of the permutation form k rounds of one sample per
/// rank, whatever the world size: a fixed global batch sees the same samples at every world size.
class DistributedSampler {
  public:
    /// Throws std::invalid_argument on world_size < 1 or rank outside [0, world_size).
    explicit DistributedSampler(const SamplerOptions& options);

    /// Selects the epoch whose permutation indices() returns.
    void set_epoch(std::uint64_t epoch) { epoch_ = epoch; }
    std::uint64_t epoch() const { return epoch_; }

    /// How many indices each rank gets per epoch.
    std::size_t num_samples() const { return num_samples_; }
    /// num_samples() * world_size: the padded (or truncated) length of the epoch's index list.
    std::size_t total_size() const {
        return num_samples_ * static_cast<std::size_t>(options_.world_size);
    }

    /// This rank's indices for the current epoch, num_samples() of them.
    std::vector<std::size_t> indices() const;

    /// The whole epoch order before it is split across ranks (total_size() entries, padded).
    std::vector<std::size_t> epoch_order() const;

  private:
    SamplerOptions options_;
    std::size_t num_samples_ = 0;
    std::uint64_t epoch_ = 0;
};

/// A permutation of [0, n) determined by `seed` alone, identical on every platform.
std::vector<std::size_t> seeded_permutation(std::size_t n, std::uint64_t seed);

}  // namespace ptrun::ddp
