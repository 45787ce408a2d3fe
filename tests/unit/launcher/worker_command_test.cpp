#include "ptrun/launcher/plan/worker_command.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/cli/usage_error.hpp"

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
