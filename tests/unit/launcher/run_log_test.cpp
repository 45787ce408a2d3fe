#include "ptrun/launcher/output/run_log.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <sstream>

#include "temp_dir.hpp"

using namespace ptrun::launcher;

namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("stamp_lines: every line stamped, terminal sequences gone", "[launcher][run_log]") {
    CHECK(stamp_lines("one\ntwo", "T") == "T one\nT two\n");
    CHECK(stamp_lines("a\n\nb\n", "T") == "T a\nT b\n");  // no stamped empty line
    CHECK(stamp_lines("\r\033[Kwaiting\033[m\n\033[32minfo\033[m: x\n", "T") ==
          "T waiting\nT info: x\n");
    CHECK(stamp_lines("", "T").empty());
}

TEST_CASE("utc_now_text: ISO 8601 in UTC with milliseconds", "[launcher][run_log]") {
    CHECK(
        std::regex_match(utc_now_text(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
}

TEST_CASE("RunLog: lines before open() come first, then every write, stamped",
          "[launcher][run_log]") {
    ptrun::launcher::test::TempDir dir;
    RunLog log;
    log.write("before the directory existed");
    const std::string path = dir.path.string() + "/ptrun.log";
    CHECK(log.open(path).empty());
    CHECK(log.path() == path);
    log.write("report line 1\nreport line 2\n");
    const std::string text = read_all(path);
    const std::regex stamped(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (.*)\n)");
    std::vector<std::string> lines;
    for (std::sregex_iterator it(text.begin(), text.end(), stamped), end; it != end; ++it)
        lines.push_back((*it)[1]);
    CHECK(lines == std::vector<std::string>{"before the directory existed", "report line 1",
                                            "report line 2"});
    CHECK(log.writes_failed() == 0);
}

TEST_CASE("RunLog: the backlog is bounded and says what it dropped", "[launcher][run_log]") {
    ptrun::launcher::test::TempDir dir;
    RunLog log;
    const std::string line(1000, 'x');
    for (int i = 0; i < 400; ++i) log.write(line);  // ~400 KB, over the 256 KiB kept
    CHECK(log.open(dir.path.string() + "/ptrun.log").empty());
    const std::string text = read_all(dir.path.string() + "/ptrun.log");
    CHECK(text.size() <= RunLog::kMaxBacklog + 200);
    CHECK_THAT(text, Catch::Contains("earlier line(s) dropped"));
}

TEST_CASE("RunLog: a directory that cannot hold it is said, and writes go nowhere",
          "[launcher][run_log]") {
    RunLog log;
    CHECK(log.open("/nonexistent-dir-ptrun/ptrun.log") == "No such file or directory");
    log.write("nothing breaks");
    CHECK(log.path().empty());
}

TEST_CASE("RunLog: discarded, it keeps nothing until opened, and an open log ignores discard",
          "[launcher][run_log]") {
    ptrun::launcher::test::TempDir dir;
    RunLog log;
    log.write("kept, then discarded");
    log.discard();
    log.write("not kept");
    const std::string path = dir.path.string() + "/ptrun.log";
    CHECK(log.open(path).empty());  // a run directory after all: written from here on
    log.write("written");
    log.discard();  // an open log stays open
    log.write("written too");
    const std::string text = read_all(path);
    CHECK_THAT(text, !Catch::Contains("kept") && !Catch::Contains("discarded"));
    CHECK_THAT(text, Catch::Contains(" written\n") && Catch::Contains(" written too\n"));
}
