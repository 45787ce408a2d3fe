#include "ptrun/launcher/agent/early_health.hpp"

#include <spdlog/spdlog.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <optional>
#include <thread>

#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/watchdog/health_server.hpp"

namespace ptrun::launcher {

struct EarlyHealth::Impl {
    boost::asio::io_context io;
    std::optional<watchdog::HealthServer> server;
    std::thread thread;

    void stop() {
        if (!thread.joinable()) return;
        // The server goes on its own thread (no handler of it runs after), then the thread.
        boost::asio::post(io, [this] {
            server.reset();
            io.stop();
        });
        thread.join();
    }
};

std::string health_endpoint_line(const LaunchConfig& config, std::uint16_t port) {
    return "health endpoint: http://" + format_endpoint(config.health_addr, port) +
           "/health, /status, /metrics and /stacks";
}

EarlyHealth::EarlyHealth(const LaunchConfig& config, std::shared_ptr<spdlog::logger> log)
    : impl_(std::make_unique<Impl>()) {
    watchdog::HealthServerOptions options;
    options.address = config.health_addr;
    options.port = config.health_port.value_or(0);
    const auto started = std::chrono::steady_clock::now();
    auto snapshot = [run_id = config.run_id, host = config.hostname, started] {
        watchdog::StatusSnapshot s;
        s.run_id = run_id;
        s.host = host;
        s.phase = "rendezvous";
        s.uptime_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        return s;
    };
    impl_->server.emplace(impl_->io, options, std::move(snapshot));
    log->info("{}", health_endpoint_line(config, impl_->server->port()));
    impl_->thread = std::thread([io = &impl_->io] {
        auto work = boost::asio::make_work_guard(*io);
        io->run();
    });
}

EarlyHealth::~EarlyHealth() { impl_->stop(); }

sys::Fd EarlyHealth::hand_over() {
    sys::Fd listener;
    boost::asio::post(impl_->io, [this, &listener] {
        if (impl_->server) listener = sys::Fd(impl_->server->duplicate_listener());
    });
    impl_->stop();  // after the duplicate: the posted handlers run in order
    return listener;
}

}  // namespace ptrun::launcher
