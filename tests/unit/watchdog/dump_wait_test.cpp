// DumpWait: the agent waits for the Python stack dumps workers write on its signal, by inotify,
// for as long as they take and no longer than its limit.
#include "ptrun/watchdog/dump_wait.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "run_io.hpp"

using namespace ptrun::watchdog;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("ptrun-dump-wait-" + std::to_string(::getpid()));
    Dir() {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~Dir() { std::filesystem::remove_all(path); }
    std::string file(const std::string& name) const {
        std::ofstream(path / name).close();
        return (path / name).string();
    }
};

void append(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::app) << text;
}

}  // namespace

TEST_CASE("dump wait: ends once every file has its dump and it stopped growing",
          "[watchdog][dump_wait]") {
    Dir dir;
    const auto a = dir.file("a"), b = dir.file("b");
    boost::asio::io_context io;
    bool done = false;
    const auto start = Clock::now();
    auto wait =
        DumpWait::start(io, {a, b}, {.settle = 50ms, .limit = 5000ms}, [&] { done = true; });
    append(a, "Current thread 0x1 (most recent call first):\n");
    CHECK_FALSE(ptrun::test::run_until(
        io, [&] { return done; }, 300ms));  // b has nothing yet
    append(b, "Current thread 0x2 (most recent call first):\n");
    REQUIRE(ptrun::test::run_until(
        io, [&] { return done; }, 2000ms));
    CHECK(Clock::now() - start < 2000ms);  // long before the limit
}

TEST_CASE("dump wait: a worker that never writes costs the limit, once, and cancel drops the call",
          "[watchdog][dump_wait]") {
    Dir dir;
    const auto a = dir.file("a");
    boost::asio::io_context io;
    int calls = 0;
    const auto start = Clock::now();
    auto wait = DumpWait::start(io, {a}, {.settle = 50ms, .limit = 300ms}, [&] { ++calls; });
    REQUIRE(ptrun::test::run_until(
        io, [&] { return calls == 1; }, 3000ms));
    CHECK(Clock::now() - start >= 300ms);
    CHECK_FALSE(ptrun::test::run_until(
        io, [&] { return calls > 1; }, 200ms));

    bool called = false;
    auto cancelled =
        DumpWait::start(io, {a}, {.settle = 50ms, .limit = 100ms}, [&] { called = true; });
    cancelled->cancel();
    CHECK_FALSE(ptrun::test::run_until(
        io, [&] { return called; }, 300ms));
}
