#include "ptrun/rendezvous/backoff.hpp"

#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace ptrun::rdzv {
namespace {

// A seed from the kernel (getrandom, glibc 2.25), not std::random_device: a statically linked
// libstdc++ implements that with arc4random, which would make ptrun need glibc 2.36.
std::uint64_t kernel_seed() {
    std::uint64_t seed = 0;
    if (::getrandom(&seed, sizeof seed, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof seed)) {
        seed =
            static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }
    return seed;
}

}  // namespace

Backoff::Backoff(BackoffOptions options)
    : options_(options), current_ms_(static_cast<double>(options.initial.count())) {
    if (options.initial.count() < 0 || options.max.count() < 0) {
        throw std::invalid_argument("Backoff: negative delay");
    }
    if (!(options.multiplier >= 1.0)) throw std::invalid_argument("Backoff: multiplier < 1");
    if (!(options.jitter >= 0.0 && options.jitter <= 1.0)) {
        throw std::invalid_argument("Backoff: jitter outside [0, 1]");
    }
    rng_.seed(options.seed != 0 ? options.seed : kernel_seed());
}

std::chrono::milliseconds Backoff::next() {
    const double max_ms = static_cast<double>(options_.max.count());
    const double base = std::min(current_ms_, max_ms);
    current_ms_ = std::min(current_ms_ * options_.multiplier, max_ms);
    std::uniform_real_distribution<double> factor(1.0 - options_.jitter, 1.0 + options_.jitter);
    const double delay = std::clamp(base * factor(rng_), 0.0, max_ms);
    return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(delay));
}

void Backoff::reset() noexcept { current_ms_ = static_cast<double>(options_.initial.count()); }

}  // namespace ptrun::rdzv
