#pragma once
/// --health-port from ptrun's start: before the agent runs, a node that does not host the
/// rendezvous store connects to it first (up to join_timeout), and a cluster manager probes the
/// port meanwhile (pytorch#176576). EarlyHealth serves it on its own thread until then: /health
/// answers ok and /status says the phase is "rendezvous"; hand_over() gives its listening socket
/// to the agent (Agent::serve_health_on), which serves the same port from then on.

#include <cstdint>
#include <memory>
#include <string>

#include "ptrun/launcher/plan/launch_config.hpp"
#include "ptrun/sys/fd.hpp"

namespace spdlog {
class logger;
}

namespace ptrun::launcher {

/// What ptrun says once its --health-port listens on `port` (here or in the agent).
std::string health_endpoint_line(const LaunchConfig& config, std::uint16_t port);

class EarlyHealth {
  public:
    /// Listens on --health-addr:--health-port now (says where, as the agent would) and serves.
    /// Throws watchdog::HealthServerError when it cannot listen.
    EarlyHealth(const LaunchConfig& config, std::shared_ptr<spdlog::logger> log);
    /// Stops serving (a socket not handed over closes).
    ~EarlyHealth();
    EarlyHealth(const EarlyHealth&) = delete;
    EarlyHealth& operator=(const EarlyHealth&) = delete;

    /// Stops serving and returns the listening socket (invalid when it could not be kept: the
    /// agent then opens the port again).
    sys::Fd hand_over();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::launcher
