#pragma once
/// Backoff: the retry-delay policy, kept apart from the code that retries.

#include <chrono>
#include <cstdint>
#include <random>

namespace ptrun::rdzv {

/// Exponential backoff with jitter: delay n is initial * multiplier^n, capped at `max`, then
/// scaled by a uniform factor in [1 - jitter, 1 + jitter] (and capped at `max` again).
struct BackoffOptions {
    std::chrono::milliseconds initial{100};
    std::chrono::milliseconds max{2000};
    double multiplier = 2.0;
    double jitter = 0.5;     ///< 0 = no randomisation, 1 = anywhere in [0, 2 x delay]
    std::uint64_t seed = 0;  ///< 0 = seed from the kernel (getrandom)
};

/// Produces successive retry delays. Not thread-safe; one per retry loop.
class Backoff {
  public:
    /// Throws std::invalid_argument on a negative duration, multiplier < 1 or jitter outside [0,1].
    explicit Backoff(BackoffOptions options = {});

    /// The next delay to sleep before retrying. Does not sleep.
    std::chrono::milliseconds next();
    /// Starts over at the initial delay (after a success).
    void reset() noexcept;

  private:
    BackoffOptions options_;
    double current_ms_;
    std::mt19937_64 rng_;
};

}  // namespace ptrun::rdzv
