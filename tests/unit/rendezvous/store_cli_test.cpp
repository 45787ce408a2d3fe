#include "store_cli.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::rdzv::cli;

namespace {
StoreCommandLine parsed(std::vector<std::string> args) {
    auto result = parse_store_command_line(std::move(args));
    REQUIRE(std::holds_alternative<StoreCommandLine>(result));
    return std::get<StoreCommandLine>(result);
}
}  // namespace

TEST_CASE("ptrun-store defaults: all interfaces, any free port, the library's limits",
          "[rdzv][store_cli]") {
    const auto cmd = parsed({});
    CHECK(cmd.server.host == "0.0.0.0");
    CHECK(cmd.server.port == 0);
    CHECK(cmd.server.limits.max_connections == ptrun::rdzv::TcpStoreLimits{}.max_connections);
    CHECK(cmd.server.limits.max_buffered_bytes == ptrun::rdzv::TcpStoreLimits{}.max_buffered_bytes);
    CHECK(cmd.server.keepalive == std::chrono::seconds(60));
    CHECK(cmd.log_level == "info");
}

TEST_CASE("ptrun-store flags reach the server options", "[rdzv][store_cli]") {
    const auto cmd =
        parsed({"--host", "127.0.0.1",           "--port=29500", "--max-key-bytes",
                "64",     "--max-value-bytes",   "1024",         "--max-keys-per-request",
                "8",      "--max-request-bytes", "4096",         "--max-queued-bytes",
                "2048",   "--max-connections",   "10",           "--max-buffered-bytes",
                "4096",   "--max-stored-bytes",  "8192",         "--keepalive",
                "5",      "--log-level",         "debug"});
    CHECK(cmd.server.host == "127.0.0.1");
    CHECK(cmd.server.port == 29500);
    CHECK(cmd.server.limits.max_key_bytes == 64);
    CHECK(cmd.server.limits.max_value_bytes == 1024);
    CHECK(cmd.server.limits.max_keys_per_request == 8);
    CHECK(cmd.server.limits.max_request_bytes == 4096);
    CHECK(cmd.server.limits.max_queued_bytes_per_connection == 2048);
    CHECK(cmd.server.limits.max_connections == 10);
    CHECK(cmd.server.limits.max_buffered_bytes == 4096);
    CHECK(cmd.server.limits.max_stored_bytes == 8192);
    CHECK(cmd.server.keepalive == std::chrono::seconds(5));
    CHECK(cmd.log_level == "debug");
}

TEST_CASE("ptrun-store --relay-to makes a relay to HOST:PORT", "[rdzv][store_cli]") {
    CHECK(parsed({}).server.relay.host.empty());
    auto cmd = parsed({"--relay-to", "node1:29500"});
    CHECK(cmd.server.relay.host == "node1");
    CHECK(cmd.server.relay.port == 29500);
    cmd = parsed({"--relay-to", "[::1]:4242"});
    CHECK(cmd.server.relay.host == "::1");
    CHECK(cmd.server.relay.port == 4242);
}

TEST_CASE("ptrun-store --help and --version are text, not a run", "[rdzv][store_cli]") {
    auto help = parse_store_command_line({"--help"});
    REQUIRE(std::holds_alternative<InfoText>(help));
    CHECK_THAT(std::get<InfoText>(help).text, Catch::Contains("--max-queued-bytes"));
    // The default listens everywhere: --help says so next to the missing authentication.
    CHECK_THAT(std::get<InfoText>(help).text,
               Catch::Contains("no authentication") && Catch::Contains("0.0.0.0"));
    auto version = parse_store_command_line({"--version"});
    REQUIRE(std::holds_alternative<InfoText>(version));
    CHECK_THAT(std::get<InfoText>(version).text, Catch::StartsWith("ptrun-store "));
}

TEST_CASE("ptrun-store refuses bad values naming the flag and the value", "[rdzv][store_cli]") {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--port", "65536"}, "65536"},
        {{"--port", "-1"}, "-1"},
        {{"--max-connections", "0"}, "0"},
        {{"--max-value-bytes", "1e3"}, "1e3"},
        {{"--log-level", "verbose"}, "verbose"},
        {{"--frobnicate"}, "--frobnicate"},
        {{"--keepalive", "-1"}, "-1"},
        {{"--max-buffered-bytes", "0"}, "0"},
        {{"stray"}, "stray"},
        {{"--relay-to", "node1"}, "node1"},
        {{"--relay-to", "node1:0"}, "node1:0"},
        {{"--relay-to", ":29500"}, ":29500"},
        {{"--relay-to", "node1:http"}, "node1:http"},
    };
    for (const auto& [args, needle] : cases) {
        INFO(args[0]);
        try {
            parse_store_command_line(args);
            FAIL("accepted");
        } catch (const UsageError& e) {
            CHECK_THAT(e.what(), Catch::Contains(needle));
        }
    }
}
