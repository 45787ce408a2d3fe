#pragma once
/// The rendezvous bench over several processes, for N beyond one process's descriptors: this
/// process hosts the store (TcpStoreServer + Coordinator, as the store host's agent does) and K
/// forked agent processes simulate a slice of the N agents each (SimAgents on their own epoll
/// thread). Each phase is driven over a pipe pair per process: the parent says when to connect,
/// go, watch, silence the lost node and stop; the children answer with their CLOCK_MONOTONIC
/// timings (shared by every process of the machine), which the parent combines.

#include <chrono>
#include <string>

namespace ptrun::bench {

struct LoadArgs {
    int nodes = 64;
    std::chrono::milliseconds heartbeat{200};
    std::chrono::milliseconds last_call{100};
    std::chrono::seconds timeout{120};
    int agent_processes = 0;     ///< 0: everything in this process (the original bench)
    int conns = 2;               ///< connections per simulated agent (sim_agents.hpp)
    int clock_samples = 0;       ///< after each admission (RdzvSession: 5)
    bool join_progress = false;  ///< joins report progress after 1 s, then every 5 s (RdzvSession)
};

/// Forks `a.agent_processes` agent processes (before any thread starts), then runs the floor,
/// close and rejoin phases and returns one JSON object with their figures and the store host's
/// memory and descriptors. Throws std::runtime_error on an error or a timeout.
std::string run_agent_processes(const LoadArgs& a);

}  // namespace ptrun::bench
