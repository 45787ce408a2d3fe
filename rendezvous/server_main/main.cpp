// ptrun-store: the standalone store server. The only place that reads signals, sets the fd limit,
// configures logging and turns exceptions into exit codes (0 stopped by a signal, 1 cannot
// listen, 2 bad flags; see man ptrun-store).
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "store_cli.hpp"

namespace {

constexpr int kExitCannotServe = 1;
constexpr int kExitUsage = 2;

std::shared_ptr<spdlog::logger> make_logger(const std::string& level) {
    auto logger = std::make_shared<spdlog::logger>(
        "ptrun-store", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    char host[256] = "?";
    ::gethostname(host, sizeof host - 1);
    logger->set_pattern(std::string("[ptrun-store ") + host + ":" + std::to_string(::getpid()) +
                        "] %l: %v");
    logger->set_level(spdlog::level::from_str(level));
    logger->flush_on(spdlog::level::trace);
    return logger;
}

/// Raises the soft open-files limit to the hard one: every client holds one or two sockets.
void raise_fd_limit(spdlog::logger& log) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) log.warn("cannot raise the open-files limit");
}

/// Blocks SIGINT/SIGTERM in every thread (the server thread inherits the mask) and returns them.
sigset_t block_stop_signals() {
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    return stop_signals;
}

int serve(ptrun::rdzv::cli::StoreCommandLine cmd, const sigset_t& stop_signals) {
    auto log = make_logger(cmd.log_level);
    raise_fd_limit(*log);
    cmd.server.logger = log;
    ptrun::rdzv::TcpStoreServer server(cmd.server);
    std::cout << "port=" << server.port() << std::endl;  // the one machine-readable line
    int signo = 0;
    while (sigwait(&stop_signals, &signo) != 0) {
    }
    log->info("{} received; stopping", signo == SIGINT ? "SIGINT" : "SIGTERM");
    server.stop();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);
    const sigset_t stop_signals = block_stop_signals();
    try {
        auto parsed = ptrun::rdzv::cli::parse_store_command_line({argv + 1, argv + argc});
        if (auto* info = std::get_if<ptrun::rdzv::cli::InfoText>(&parsed)) {
            std::cout << info->text;
            return 0;
        }
        return serve(std::get<ptrun::rdzv::cli::StoreCommandLine>(std::move(parsed)), stop_signals);
    } catch (const ptrun::rdzv::cli::UsageError& e) {
        std::fprintf(stderr, "ptrun-store: error: %s\n", e.what());
        return kExitUsage;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ptrun-store: error: %s\n", e.what());
        return kExitCannotServe;
    }
}
