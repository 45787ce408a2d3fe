#include "ptrun/launcher/membership/wait_progress.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include "ptrun/launcher/cli/endpoint.hpp"
#include "ptrun/launcher/output/console_log_sink.hpp"
#include "ptrun/launcher/output/duration_text.hpp"
#include "ptrun/launcher/output/printable.hpp"

namespace ptrun::launcher {
namespace {

bool is_loopback(const std::string& host) {
    return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

std::string nodes_text(const NodeRange& n) {
    return n.min == n.max ? std::to_string(n.min)
                          : std::to_string(n.min) + ":" + std::to_string(n.max);
}

/// The ConsoleLogSink among `logger`'s sinks, or null (a logger made elsewhere, e.g. in tests).
std::shared_ptr<ConsoleLogSink> status_sink_of(const std::shared_ptr<spdlog::logger>& logger) {
    for (const auto& sink : logger->sinks()) {
        if (auto console = std::dynamic_pointer_cast<ConsoleLogSink>(sink)) return console;
    }
    return nullptr;
}

}  // namespace

std::string reachable_address(const LaunchConfig& c) {
    if (!c.local_addr.empty()) return c.local_addr;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return "";
    std::string found;
    for (auto* a = list; a && found.empty(); a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
        if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
        char text[NI_MAXHOST];
        if (::getnameinfo(a->ifa_addr, sizeof(sockaddr_in), text, sizeof text, nullptr, 0,
                          NI_NUMERICHOST) == 0) {
            found = text;
        }
    }
    ::freeifaddrs(list);
    return found;
}

std::string join_command(const LaunchConfig& c) {
    std::string cmd = "ptrun --nnodes " + nodes_text(c.nnodes) + " --nproc-per-node " +
                      std::to_string(c.nproc_per_node);
    if (c.max_restarts > 0) cmd += " --max-restarts " + std::to_string(c.max_restarts);
    std::string endpoint;  // the store, or with etcd every member as the job lists them
    if (!c.rdzv_file.empty()) {
        endpoint = c.rdzv_file;
    } else if (c.rdzv_backend != RdzvBackend::Etcd) {
        endpoint = format_endpoint(c.rendezvous_store.host, c.rendezvous_store.port);
    } else {
        const bool https_in_urls = c.etcd.https && c.rdzv_conf.count("protocol") == 0;
        for (const auto& m : c.etcd.endpoints) {
            endpoint += (endpoint.empty() ? "" : ",") +
                        std::string(https_in_urls ? "https://" : "") +
                        format_endpoint(m.host, m.port);
        }
    }
    cmd += " --rdzv-endpoint " + shell_quoted(endpoint);
    if (c.rdzv_backend != RdzvBackend::Static) {
        cmd += " --rdzv-backend " + std::string(backend_name(c.rdzv_backend));
    }
    cmd += " --rdzv-id " + shell_quoted(c.run_id);
    std::string conf;  // the job's --rdzv-conf, whole (timeouts, a key file, etcd's TLS)
    for (const auto& [key, value] : c.rdzv_conf)
        conf += (conf.empty() ? "" : ",") + key + "=" + value;
    if (!conf.empty()) cmd += " --rdzv-conf " + shell_quoted(conf);
    if (c.module) cmd += " -m";
    if (c.no_python) cmd += " --no-python";
    cmd += " " + shell_quoted(c.program);
    for (const auto& arg : c.program_args) cmd += " " + shell_quoted(arg);
    return cmd;
}

WaitProgress::WaitProgress(const LaunchConfig& config, std::shared_ptr<spdlog::logger> logger)
    : config_(config), log_(std::move(logger)), console_(status_sink_of(log_)) {
    if (console_ && !console_->shows_status()) console_.reset();
}

std::chrono::milliseconds WaitProgress::interval() const {
    return console_ ? std::chrono::milliseconds(1'000) : std::chrono::milliseconds(5'000);
}

std::string WaitProgress::waiting_text(const JoinProgress& p) {
    const auto& n = config_.nnodes;
    const std::string joined = p.joined < 0 ? "?" : std::to_string(p.joined);
    if (p.joined >= n.min && n.max > n.min) {
        if (last_call_since_.count() < 0) last_call_since_ = p.elapsed;
        auto window =
            std::chrono::duration_cast<std::chrono::seconds>(config_.rdzv.last_call_timeout);
        auto left = std::max(std::chrono::seconds(0), window - (p.elapsed - last_call_since_));
        return "minimum reached: " + joined + " of " + std::to_string(n.max) +
               " nodes joined; admitting more nodes for " + std::to_string(left.count()) +
               " s (last_call_timeout)";
    }
    return "waiting for nodes: " + joined + " joined (min " + std::to_string(n.min) + ", max " +
           std::to_string(n.max) + "), " + elapsed_text(p.elapsed) + " of " +
           seconds_text(config_.rdzv.join_timeout) + " (join_timeout)";
}

void WaitProgress::update(const JoinProgress& p) {
    if (p.done) {
        if (console_) console_->clear_status();
        first_ = true;
        last_call_said_ = false;
        last_line_ = std::chrono::seconds(-1);
        last_call_since_ = std::chrono::seconds(-1);
        return;
    }
    const bool in_last_call =
        p.joined >= config_.nnodes.min && config_.nnodes.max > config_.nnodes.min;
    const std::string text = waiting_text(p);
    if (first_) {
        first_ = false;
        last_call_said_ = in_last_call;
        last_line_ = p.elapsed;
        log_->info("{}; to add a node, run this on it:", text);
        log_->info("  {}", join_command(config_));
        const auto& host = config_.rendezvous_store.host;
        if (config_.rdzv_file.empty() && is_loopback(host)) {
            auto addr = reachable_address(config_);
            log_->info(
                "  ({} is this machine only: for nodes elsewhere, start every node with "
                "--rdzv-endpoint {})",
                host,
                format_endpoint(addr.empty() ? "<this host's address>" : addr,
                                config_.rendezvous_store.port));
        }
    } else if (in_last_call && !last_call_said_) {
        last_call_said_ = true;
        last_line_ = p.elapsed;
        log_->info("{}", text);
    } else if (!console_ && p.elapsed - last_line_ >= std::chrono::seconds(60)) {
        last_line_ = p.elapsed;
        log_->info("{}", text);
    }
    if (console_) console_->set_status("ptrun: " + text);
}

}  // namespace ptrun::launcher
