#include "store_cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <string_view>

namespace ptrun::rdzv::cli {
namespace {

constexpr std::array<std::string_view, 7> kLevels{"trace", "debug",    "info", "warn",
                                                  "error", "critical", "off"};

std::string version_text() { return std::string("ptrun-store ") + PTRUN_VERSION + "\n"; }

bool all_digits(const std::string& v) {
    return !v.empty() && v.size() <= 19 && v.find_first_not_of("0123456789") == std::string::npos;
}

/// Checked before conversion, so the message names the value rather than a C++ type.
const CLI::Validator kPositive(
    [](std::string& v) -> std::string {
        return all_digits(v) && std::stoull(v) > 0 ? "" : "'" + v + "' is not a positive integer";
    },
    "N>0");
const CLI::Validator kSeconds(
    [](std::string& v) -> std::string {
        return all_digits(v) && std::stoull(v) <= 32767 ? "" : "'" + v + "' is not 0-32767 seconds";
    },
    "0-32767");
const CLI::Validator kPort(
    [](std::string& v) -> std::string {
        return all_digits(v) && std::stoull(v) <= 65535 ? ""
                                                        : "'" + v + "' is not a port (0-65535)";
    },
    "0-65535");

}  // namespace

std::variant<StoreCommandLine, InfoText> parse_store_command_line(std::vector<std::string> args) {
    StoreCommandLine cmd;
    auto& opts = cmd.server;
    auto& limits = opts.limits;
    CLI::App app{
        "ptrun-store: a standalone c10d TCPStore-compatible store server (PyTorch 1.13 and 2.x "
        "clients).\nPrints 'port=N' on stdout once listening; SIGINT/SIGTERM stop it (exit 0).\n"
        "The TCPStore protocol has no authentication: anyone who reaches the port can read and "
        "change every key.\nBy default it listens on every interface (0.0.0.0); give --host "
        "127.0.0.1 or the address of a trusted network where you can.",
        "ptrun-store"};
    app.set_version_flag("--version", version_text());
    app.add_option("--host", opts.host,
                   "Address to listen on: 0.0.0.0 (every interface; no authentication), ::, "
                   "127.0.0.1, a name")
        ->capture_default_str();
    app.add_option("--port", opts.port, "Port to listen on; 0 = any free port")
        ->check(kPort)
        ->capture_default_str();
    app.add_option("--max-key-bytes", limits.max_key_bytes, "Longest key accepted")
        ->check(kPositive)
        ->capture_default_str();
    app.add_option("--max-value-bytes", limits.max_value_bytes, "Largest value accepted")
        ->check(kPositive)
        ->capture_default_str();
    app.add_option("--max-keys-per-request", limits.max_keys_per_request,
                   "Most keys in one CHECK/WAIT/MULTI_GET/MULTI_SET")
        ->check(kPositive)
        ->capture_default_str();
    app.add_option("--max-request-bytes", limits.max_request_bytes, "Largest whole request")
        ->check(kPositive)
        ->capture_default_str();
    app.add_option("--max-queued-bytes", limits.max_queued_bytes_per_connection,
                   "Reply bytes queued for one connection before it is dropped")
        ->check(kPositive)
        ->capture_default_str();
    app.add_option("--max-connections", limits.max_connections,
                   "Open connections; more are accepted and closed")
        ->check(kPositive)
        ->capture_default_str();
    app.add_option("--max-buffered-bytes", limits.max_buffered_bytes,
                   "All connections' partial requests and unread replies; over it, the "
                   "connection holding the most is closed")
        ->check(kPositive)
        ->capture_default_str();
    app.add_option("--max-stored-bytes", limits.max_stored_bytes,
                   "Keys, values and queues held; a write past it closes the writer's connection")
        ->check(kPositive)
        ->capture_default_str();
    auto keepalive_seconds = static_cast<long long>(opts.keepalive.count());
    app.add_option("--keepalive", keepalive_seconds,
                   "Seconds of silence before TCP keepalive probes a client (6 more, this/6 "
                   "apart); a client whose host vanished is then dropped. 0 = off")
        ->check(kSeconds)
        ->capture_default_str();
    std::string relay_to;
    app.add_option("--relay-to", relay_to,
                   "HOST:PORT of a store to relay to: store nothing here and forward every "
                   "request there over a few connections (a node's store for its own ranks)");
    app.add_option("--log-level", cmd.log_level,
                   "trace, debug, info, warn, error, critical or off (logs go to stderr)")
        ->check(CLI::IsMember(std::vector<std::string>(kLevels.begin(), kLevels.end())))
        ->capture_default_str();
    std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
    try {
        app.parse(args);
    } catch (const CLI::CallForHelp&) {
        return InfoText{app.help()};
    } catch (const CLI::CallForVersion&) {
        return InfoText{version_text()};
    } catch (const CLI::ParseError& e) {
        throw UsageError(e.what());
    }
    opts.keepalive = std::chrono::seconds(keepalive_seconds);
    if (!relay_to.empty()) {
        const auto colon = relay_to.rfind(':');
        std::string host = colon == std::string::npos ? "" : relay_to.substr(0, colon);
        if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
            host = host.substr(1, host.size() - 2);
        }
        unsigned long port = 0;
        const std::string digits = colon == std::string::npos ? "" : relay_to.substr(colon + 1);
        const bool numeric = !digits.empty() && digits.size() <= 5 &&
                             digits.find_first_not_of("0123456789") == std::string::npos;
        if (numeric) port = std::stoul(digits);
        if (host.empty() || !numeric || port == 0 || port > 65535) {
            throw UsageError(
                "--relay-to: expected HOST:PORT (e.g. node1:29500 or [::1]:29500), "
                "got '" +
                relay_to + "'");
        }
        opts.relay.host = host;
        opts.relay.port = static_cast<std::uint16_t>(port);
    }
    return cmd;
}

}  // namespace ptrun::rdzv::cli
