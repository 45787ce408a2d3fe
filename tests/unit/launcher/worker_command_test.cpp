#include "ptrun/launcher/plan/worker_command.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/plan/local_rank_macro.hpp"

using namespace ptrun::launcher;

namespace {

LaunchConfig with_program(std::string program, std::vector<std::string> args = {}) {
    LaunchConfig c;
    c.program = std::move(program);
    c.program_args = std::move(args);
    return c;
}

}  // namespace

TEST_CASE("worker command: executables run directly with their arguments", "[launcher]") {
    auto cmd = make_worker_command(with_program("true", {"a", "b"}), {{"PATH", "/usr/bin:/bin"}});
    CHECK(cmd.exec_path.find("/true") != std::string::npos);
    CHECK(cmd.argv == std::vector<std::string>{"true", "a", "b"});
}

TEST_CASE("worker command: modules run under python3 -u -m", "[launcher]") {
    auto c = with_program("pkg.train", {"--lr", "1"});
    c.module = true;
    auto cmd =
        make_worker_command(c, {{"PATH", "/usr/bin:/bin"}, {"PYTHON_EXEC", "/usr/bin/python3"}});
    CHECK(cmd.argv ==
          std::vector<std::string>{"/usr/bin/python3", "-u", "-m", "pkg.train", "--lr", "1"});
}

TEST_CASE("worker command: --no-python runs a .py file directly", "[launcher]") {
    auto c = with_program("/bin/true.py");
    c.no_python = true;
    CHECK_THROWS_WITH(make_worker_command(c, {}), Catch::Contains("'/bin/true.py'"));
}

TEST_CASE("worker command: missing programs and interpreters are named", "[launcher]") {
    CHECK_THROWS_WITH(make_worker_command(with_program("definitely-not-here"), {{"PATH", "/bin"}}),
                      Catch::Contains("not found on PATH"));
    CHECK_THROWS_WITH(
        make_worker_command(with_program("x.py"), {{"PYTHON_EXEC", "/nonexistent/python"}}),
        Catch::Contains("python interpreter '/nonexistent/python'"));
}

TEST_CASE("worker command: Python workers start through the runner unless --no-runner",
          "[launcher]") {
    const ptrun::env::EnvMap env{{"PATH", "/usr/bin:/bin"}, {"PYTHON_EXEC", "/usr/bin/python3"}};
    Installation installed;
    installed.runner = "/opt/ptrun/lib/ptrun/python/ptrun/_runner.py";
    auto module = with_program("pkg.train", {"--lr", "1"});
    module.module = true;
    auto cmd = make_worker_command(module, env, installed);
    CHECK(cmd.argv == std::vector<std::string>{"/usr/bin/python3", "-u", installed.runner, "-m",
                                               "pkg.train", "--lr", "1"});
    CHECK(cmd.runner == installed.runner);
    auto script = with_program(PTRUN_TEST_SOURCE_DIR "/python/ptrun/heartbeat.py", {"-m"});
    cmd = make_worker_command(script, env, installed);
    CHECK(cmd.argv == std::vector<std::string>{"/usr/bin/python3", "-u", installed.runner, "--",
                                               script.program, "-m"});
    script.no_runner = true;
    cmd = make_worker_command(script, env, installed);
    CHECK(cmd.argv == std::vector<std::string>{"/usr/bin/python3", "-u", script.program, "-m"});
    CHECK(cmd.runner.empty());
    cmd = make_worker_command(with_program("true"), env, installed);  // not Python: no runner
    CHECK(cmd.argv == std::vector<std::string>{"true"});
}

TEST_CASE("worker command: --preload forks from the runner, or is refused naming why",
          "[launcher]") {
    const ptrun::env::EnvMap env{{"PATH", "/usr/bin:/bin"}, {"PYTHON_EXEC", "/usr/bin/python3"}};
    Installation installed;
    installed.runner = "/opt/ptrun/lib/ptrun/python/ptrun/_runner.py";
    auto script = with_program(PTRUN_TEST_SOURCE_DIR "/python/ptrun/heartbeat.py", {"a"});
    script.preload = {"torch", "numpy"};
    auto cmd = make_worker_command(script, env, installed);
    CHECK(cmd.zygote_argv(script.preload) ==
          std::vector<std::string>{"/usr/bin/python3", "-u", installed.runner, "--zygote",
                                   "torch,numpy", "--", script.program, "a"});
    CHECK_THROWS_WITH(make_worker_command(script, env, {}),
                      Catch::Contains("this ptrun has no runner installed"));
    script.no_runner = true;
    CHECK_THROWS_WITH(make_worker_command(script, env, installed),
                      Catch::Contains("--no-runner turns the runner off"));
    auto binary = with_program("true");
    binary.preload = {"torch"};
    CHECK_THROWS_WITH(make_worker_command(binary, env, installed),
                      Catch::Contains("program 'true' is not run through Python"));
}

TEST_CASE("installation: the runner beside ptrun, and a wheel's own interpreter", "[launcher]") {
    namespace fs = std::filesystem;
    const fs::path root =
        fs::temp_directory_path() / ("ptrun-install-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "bin");
    fs::create_directories(root / "lib/ptrun/python/ptrun");
    const auto exe = (root / "bin/ptrun").string();
    CHECK(find_installation(exe).runner.empty());
    std::ofstream(root / "lib/ptrun/python/ptrun/_runner.py") << "\n";
    auto found = find_installation(exe);
    CHECK(found.runner == (root / "lib/ptrun/python/ptrun/_runner.py").string());
    CHECK(found.own_python.empty());  // not installed from the wheel
    std::ofstream(root / "lib/ptrun/python/ptrun/WHEEL-INSTALL") << "\n";
    CHECK(find_installation(exe).own_python.empty());  // no bin/python3
    fs::copy_file("/bin/true", root / "bin/python3");
    found = find_installation(exe);
    CHECK(found.own_python == (root / "bin/python3").string());
    auto script = with_program(PTRUN_TEST_SOURCE_DIR "/python/ptrun/heartbeat.py");
    const auto cmd = make_worker_command(script, {{"PATH", "/usr/bin:/bin"}}, found);
    CHECK(cmd.exec_path == found.own_python);
    CHECK_THAT(cmd.interpreter_origin, Catch::Contains("wheel"));
    const auto exec = make_worker_command(
        script, {{"PATH", "/usr/bin:/bin"}, {"PYTHON_EXEC", "/usr/bin/python3"}}, found);
    CHECK(exec.exec_path == "/usr/bin/python3");  // PYTHON_EXEC wins
    fs::remove_all(root);
}

TEST_CASE("${local_rank} is replaced as Python's Template.safe_substitute does", "[launcher]") {
    // Each expected value is what torchrun's macros.substitute gives for local rank 3.
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"x${local_rank}y", "x3y"},
        {"$local_rank", "3"},
        {"$local_rankX", "$local_rankX"},
        {"$$", "$"},
        {"a$", "a$"},
        {"${other}", "${other}"},
        {"${local_rank", "${local_rank"},
        {"$LOCAL_RANK", "$LOCAL_RANK"},
        {"${}", "${}"},
        {"$1", "$1"},
        {"$$local_rank", "$local_rank"},
        {"out_${local_rank}/$local_rank.log", "out_3/3.log"},
    };
    for (const auto& [given, expected] : cases) {
        INFO(given);
        CHECK(substitute_local_rank(given, 3) == expected);
    }
}

TEST_CASE("argv_for replaces the macro in the user's part alone", "[launcher]") {
    auto binary = make_worker_command(with_program("true", {"--out", "log_${local_rank}"}),
                                      {{"PATH", "/usr/bin:/bin"}});
    CHECK(binary.argv_for(2) == std::vector<std::string>{"true", "--out", "log_2"});
    auto c = with_program("pkg.t_${local_rank}", {"${local_rank}"});
    c.module = true;
    auto module = make_worker_command(c, {{"PATH", "/usr/bin:/bin"}, {"PYTHON_EXEC", "python3"}});
    const auto argv = module.argv_for(1);
    CHECK(argv[argv.size() - 2] == "pkg.t_1");  // torchrun's reaches the script too
    CHECK(argv.back() == "1");
    CHECK(module.argv_for(0).front() == module.argv.front());
}
