#pragma once
/// CallTimer: one collective's name and deadline, handed down to every blocking step.

#include <chrono>

namespace ptrun::ddp::detail {

/// Name for messages, the absolute deadline, and the timeout it came from.
struct CallTimer {
    const char* collective;
    std::chrono::steady_clock::time_point deadline;
    std::chrono::milliseconds timeout;

    /// A timer for `collective` that expires `timeout` from now.
    static CallTimer start(const char* collective, std::chrono::milliseconds timeout) {
        return {collective, std::chrono::steady_clock::now() + timeout, timeout};
    }
};

}  // namespace ptrun::ddp::detail
