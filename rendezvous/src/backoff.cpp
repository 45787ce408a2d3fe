#include "ptrun/rendezvous/backoff.hpp"

#include <algorithm>
#include <stdexcept>

namespace ptrun::rdzv {

Backoff::Backoff(BackoffOptions options)
    : options_(options), current_ms_(static_cast<double>(options.initial.count())) {
    if (options.initial.count() < 0 || options.max.count() < 0) {
        throw std::invalid_argument("Backoff: negative delay");
    }
    if (!(options.multiplier >= 1.0)) throw std::invalid_argument("Backoff: multiplier < 1");
    if (!(options.jitter >= 0.0 && options.jitter <= 1.0)) {
        throw std::invalid_argument("Backoff: jitter outside [0, 1]");
    }
    rng_.seed(options.seed != 0 ? options.seed : std::random_device{}());
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
