#pragma once
/// Drives an io_context on the test's thread until a condition holds or a deadline passes.

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <chrono>

namespace ptrun::test {

/// Runs `io`'s handlers until pred() is true (true) or `timeout` passes (false).
template <class Pred>
bool run_until(boost::asio::io_context& io, Pred pred, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        io.restart();
        io.run_one_for(std::chrono::milliseconds(50));
    }
    return true;
}

}  // namespace ptrun::test
