// Evidence with real processes: bounded helper commands, native stacks through eu-stack and gdb,
// and Python tracebacks through faulthandler and SIGABRT.
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>

#include "child_process.hpp"
#include "ptrun/watchdog/bounded_command.hpp"
#include "ptrun/watchdog/stack_capture.hpp"
#include "ptrun/watchdog/stack_summary.hpp"
#include "run_io.hpp"

using namespace ptrun::watchdog;
using ptrun::test::ChildProcess;
using ptrun::test::run_until;
using namespace std::chrono_literals;

namespace {

std::optional<CommandOutcome> run_command(std::vector<std::string> argv, CommandLimits limits,
                                          std::chrono::milliseconds deadline = 30s) {
    boost::asio::io_context io;
    std::optional<CommandOutcome> out;
    int calls = 0;
    auto cmd =
        BoundedCommand::start(io, std::move(argv), {"LC_ALL=C"}, limits, [&](CommandOutcome o) {
            out = std::move(o);
            ++calls;
        });
    run_until(
        io, [&] { return out.has_value(); }, deadline);
    io.restart();
    io.poll();
    CHECK(calls <= 1);
    return out;
}

std::string stack_tool_path(const char* name) {
    for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
        const std::string p = std::string(dir) + "/" + name;
        if (::access(p.c_str(), X_OK) == 0) return p;
    }
    FAIL(name << " is not installed: scripts/install-deps.sh installs it (elfutils, gdb)");
    return {};
}

}  // namespace

TEST_CASE("a bounded command's output and exit code come back", "[watchdog][evidence]") {
    auto out = run_command({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, {});
    REQUIRE(out);
    CHECK(out->output == "out\nerr\n");
    CHECK(out->exit_code == 3);
    CHECK_FALSE(out->timed_out);
    CHECK(out->error.empty());
}

TEST_CASE("a bounded command is killed at its deadline", "[watchdog][evidence]") {
    const auto start = std::chrono::steady_clock::now();
    auto out = run_command({"/bin/sleep", "60"}, CommandLimits{.timeout = 300ms});
    REQUIRE(out);
    CHECK(out->timed_out);
    CHECK_FALSE(out->exit_code);
    CHECK(std::chrono::steady_clock::now() - start < 20s);
}

TEST_CASE("a bounded command's output is cut at its limit", "[watchdog][evidence]") {
    auto out = run_command({"/usr/bin/yes"}, CommandLimits{.timeout = 300ms, .max_output = 1000});
    REQUIRE(out);
    CHECK(out->output.size() == 1000);
    CHECK(out->truncated);
    CHECK(out->timed_out);
}

TEST_CASE("a bounded command that cannot start says why", "[watchdog][evidence]") {
    auto out = run_command({"/nonexistent/tool"}, {});
    REQUIRE(out);
    CHECK_THAT(out->error, Catch::Contains("cannot run /nonexistent/tool"));
    out = run_command({"relative-tool"}, {});
    REQUIRE(out);
    CHECK_THAT(out->error, Catch::Contains("absolute"));
}

TEST_CASE("a cancelled bounded command still completes once", "[watchdog][evidence]") {
    boost::asio::io_context io;
    std::optional<CommandOutcome> out;
    auto cmd = BoundedCommand::start(io, {"/bin/sleep", "60"}, {}, {},
                                     [&](CommandOutcome o) { out = std::move(o); });
    CHECK(cmd->pid() > 0);
    cmd->cancel();
    REQUIRE(run_until(
        io, [&] { return out.has_value(); }, 20s));
    CHECK(out->cancelled);
    CHECK_FALSE(out->timed_out);
}

TEST_CASE("find_stack_tool prefers eu-stack and trusts absolute PATH entries only",
          "[watchdog][evidence]") {
    const auto root =
        std::filesystem::temp_directory_path() / ("ptrun-tools-" + std::to_string(::getpid()));
    for (const char* d : {"a", "b"}) std::filesystem::create_directories(root / d);
    auto make_tool = [&](const char* dir, const char* name) {
        const auto p = root / dir / name;
        std::ofstream(p) << "#!/bin/sh\n";
        std::filesystem::permissions(p, std::filesystem::perms::owner_all);
    };
    make_tool("a", "gdb");
    const std::string a = (root / "a").string(), b = (root / "b").string();
    CHECK(find_stack_tool(a + ":" + b) == StackTool{StackToolKind::Gdb, a + "/gdb"});
    make_tool("b", "eu-stack");
    CHECK(find_stack_tool(a + ":" + b) == StackTool{StackToolKind::EuStack, b + "/eu-stack"});
    CHECK_FALSE(find_stack_tool("relative/dir::" + (root / "none").string()));
    CHECK_FALSE(find_stack_tool(""));
    std::filesystem::remove_all(root);
    CHECK(stack_command(StackTool{StackToolKind::EuStack, "/usr/bin/eu-stack"}, 42, 8) ==
          std::vector<std::string>{"/usr/bin/eu-stack", "-p", "42", "-m", "-s", "-n", "8"});
}

namespace {

// The fixture is built as this test is: under ThreadSanitizer its runtime adds a thread of its
// own (__tsan::BackgroundThread) to every process.
#if defined(__SANITIZE_THREAD__)
constexpr std::size_t kRuntimeThreads = 1;
#else
constexpr std::size_t kRuntimeThreads = 0;
#endif

}  // namespace

TEST_CASE("native stacks of real processes name where each one blocks", "[watchdog][evidence]") {
    const StackToolKind kind = GENERATE(StackToolKind::EuStack, StackToolKind::Gdb);
    const StackTool tool{kind,
                         stack_tool_path(kind == StackToolKind::EuStack ? "eu-stack" : "gdb")};
    INFO(stack_tool_name(kind));
    std::vector<std::unique_ptr<ChildProcess>> workers;
    for (const char* mode : {"allreduce", "loader", "allreduce"}) {
        workers.push_back(std::make_unique<ChildProcess>(
            std::vector<std::string>{PTRUN_TEST_BLOCKED_WORKER, mode}));
        REQUIRE(workers.back()->wait_for_output("ready\n", 30s));
    }
    boost::asio::io_context io;
    std::optional<std::vector<NativeStacks>> captured;
    auto capture =
        StackCapture::start(io, tool, {workers[0]->pid(), workers[1]->pid(), workers[2]->pid()},
                            CommandLimits{.timeout = 60s}, 2,
                            [&](std::vector<NativeStacks> s) { captured = std::move(s); });
    REQUIRE(run_until(
        io, [&] { return captured.has_value(); }, 120s));
    REQUIRE(captured->size() == 3);
    std::vector<RankStacks> ranks;
    for (std::size_t i = 0; i < 3; ++i) {
        const NativeStacks& s = (*captured)[i];
        INFO(s.text);
        CHECK(s.pid == workers[i]->pid());
        CHECK(s.note.empty());
        REQUIRE(s.threads.size() == 2 + kRuntimeThreads);  // main and helper
        CHECK(std::count_if(s.threads.begin(), s.threads.end(),
                            [](const ThreadStack& t) { return t.main; }) == 1);
        ranks.push_back(RankStacks{.rank = static_cast<int>(i),
                                   .local_rank = static_cast<int>(i),
                                   .pid = s.pid,
                                   .native = s.threads,
                                   .native_text = s.text});
    }
    const std::string summary = summarise_stacks(ranks);
    CHECK_THAT(summary, Catch::StartsWith("rank 1 in `hang_fixture::load_next_batch`") &&
                            Catch::Contains("ranks 0,2 in `hang_fixture::fake_allreduce_wait`"));
    // The processes go on after the capture (blocked as before, not killed).
    for (auto& w : workers) CHECK(::kill(w->pid(), 0) == 0);
}

TEST_CASE("a capture of a process that vanished notes it", "[watchdog][evidence]") {
    const StackTool tool{StackToolKind::EuStack, stack_tool_path("eu-stack")};
    pid_t gone;
    {
        ChildProcess child({"/bin/true"});
        REQUIRE(child.wait(30s));
        gone = child.pid();
    }
    boost::asio::io_context io;
    std::optional<std::vector<NativeStacks>> captured;
    StackCapture::start(io, tool, {gone}, {}, 1,
                        [&](std::vector<NativeStacks> s) { captured = std::move(s); });
    REQUIRE(run_until(
        io, [&] { return captured.has_value(); }, 60s));
    REQUIRE(captured->size() == 1);
    CHECK(captured->at(0).threads.empty());
    CHECK_THAT(captured->at(0).note, Catch::Contains("eu-stack printed no stack"));
}

TEST_CASE("SIGABRT makes a Python worker print where it is, without a core",
          "[watchdog][evidence]") {
    const auto dir =
        std::filesystem::temp_directory_path() / ("ptrun-traceback-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    // The worker allows itself core dumps as far as it may, so that a missing core proves
    // send_traceback_signal turned them off.
    const auto script = dir / "worker.py";
    std::ofstream(script) << "import os, resource, time\n"
                             "soft, hard = resource.getrlimit(resource.RLIMIT_CORE)\n"
                             "try:\n"
                             "    resource.setrlimit(resource.RLIMIT_CORE, (-1, -1))\n"
                             "except (ValueError, OSError):\n"
                             "    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))\n"
                             "def wait_for_batch():\n"
                             "    print('ready', flush=True)\n"
                             "    time.sleep(600)\n"
                             "os.chdir(os.path.dirname(__file__))\n"
                             "os.remove(__file__)\n"
                             "wait_for_batch()\n";
    ChildProcess worker({PTRUN_TEST_PYTHON, script.string()}, {{"PYTHONFAULTHANDLER", "1"}});
    REQUIRE(worker.wait_for_output("ready\n", 60s));
    REQUIRE(send_traceback_signal(worker.pid()));
    auto result = worker.wait(60s);
    REQUIRE(result);
    INFO(result->output);
    CHECK(result->signal == SIGABRT);
    RankStacks rank{.rank = 0, .python = parse_python_faulthandler(result->output)};
    REQUIRE(rank.python.size() == 1);
    // Line 9 (the sleep), or 8 when the signal came as print() returned.
    CHECK_THAT(describe_place(place_of(rank)),
               Catch::Matches("`wait_for_batch` \\(worker.py:[89]\\)"));
    CHECK(std::filesystem::is_empty(dir));  // no core file
    std::filesystem::remove_all(dir);
}
