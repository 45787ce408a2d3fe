#pragma once
/// The store host as start_multi_node builds it (the real TcpStoreServer, and a Coordinator over
/// loopback), and what it costs this process: memory and descriptors.

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstddef>
#include <memory>

#include "ptrun/launcher/membership/coordinator.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace ptrun::bench {

struct StoreHost {
    rdzv::TcpStoreServer server{[] {
        rdzv::TcpStoreServerOptions o;
        o.host = "127.0.0.1";
        return o;
    }()};
    std::shared_ptr<spdlog::logger> logger = [] {
        auto l = std::make_shared<spdlog::logger>(
            "coordinator", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        l->set_level(spdlog::level::warn);
        return l;
    }();

    std::unique_ptr<launcher::Coordinator> coordinator(const launcher::RdzvKeys& keys,
                                                       launcher::CoordinatorPolicy p,
                                                       std::chrono::milliseconds heartbeat) {
        launcher::CoordinatorOptions o;
        o.store = launcher::HostPort{"127.0.0.1", server.port()};
        o.keys = keys;
        p.master_addr = "127.0.0.1";
        p.master_port = server.port();
        o.policy = std::move(p);
        o.heartbeat = heartbeat;
        o.clear_worker_keys = [this] { server.clear_except(launcher::kRdzvKeyRoot); };
        o.logger = logger;
        return std::make_unique<launcher::Coordinator>(std::move(o));
    }
};

/// This process now: resident and peak resident memory (/proc/self/status), open descriptors.
struct ProcessUsage {
    std::size_t rss_kb = 0;
    std::size_t hwm_kb = 0;
    std::size_t fds = 0;
    static ProcessUsage now();
};

}  // namespace ptrun::bench
