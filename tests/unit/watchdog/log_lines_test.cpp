#include "ptrun/watchdog/log_lines.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "ptrun/watchdog/logs_client.hpp"

using namespace ptrun::watchdog;

namespace {

struct TempDir {
    TempDir() {
        char name[] = "/tmp/log_lines_test.XXXXXX";
        path = ::mkdtemp(name);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    std::string path;
};

void write_file(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("parse_logs_query takes rank, tail and offsets, and nothing else", "[logs]") {
    std::string error;
    auto q = parse_logs_query("rank=3&tail=20&out=100&err=7", &error);
    REQUIRE(q);
    CHECK(*q == LogsQuery{3, 20, 100, 7, std::nullopt});
    CHECK(parse_logs_query(logs_query_text(*q), &error) == q);
    CHECK(parse_logs_query("rank=0", &error)->tail == kDefaultLogTail);
    for (const char* bad :
         {"", "tail=3", "rank=", "rank=-1", "rank=1&rank=2", "rank=../../etc/passwd",
          "rank=2147483648", "rank=1&tail=0", "rank=1&tail=10001", "rank=1&x=2", "rank=1&out=1a",
          "rank=1&&", "rank"}) {
        INFO(bad);
        CHECK_FALSE(parse_logs_query(bad, &error));
        CHECK_FALSE(error.empty());
    }
    CHECK_FALSE(parse_logs_query("rank=1&" + std::string(300, 'a'), &error));
}

TEST_CASE("parse_logs_query takes the set of files the offsets belong to", "[logs]") {
    std::string error;
    auto q = parse_logs_query("rank=3&out=100&err=7&files=2", &error);
    REQUIRE(q);
    CHECK(q->files == 2u);
    CHECK(parse_logs_query(logs_query_text(*q), &error) == q);
    CHECK_FALSE(parse_logs_query("rank=3&files=1&files=2", &error));
    CHECK_FALSE(parse_logs_query("rank=3&files=x", &error));
}

TEST_CASE("read_log_chunk of an ended file passes its last line without its end", "[logs]") {
    TempDir dir;
    const std::string log = dir.path + "/stdout.log";
    write_file(log, "one\npart");
    auto open = read_log_chunk(log, 0, LogStream::Out, 0, 10);
    REQUIRE(open.lines.size() == 1);
    CHECK(open.next_offset == 4);
    CHECK_FALSE(open.at_end);
    auto ended = read_log_chunk(log, 0, LogStream::Out, 0, 10, true);
    REQUIRE(ended.lines.size() == 2);
    CHECK(ended.lines[1].text == "part");
    CHECK(ended.next_offset == 8);
    CHECK(ended.at_end);
    CHECK(read_log_chunk(log, 0, LogStream::Out, 8, 10, true).lines.empty());
}

TEST_CASE("read_log_chunk gives whole lines with their capture times", "[logs]") {
    TempDir dir;
    const std::string log = dir.path + "/stdout.log";
    CHECK(log_times_path(log) == dir.path + "/stdout.times");
    write_file(log, "one\ntwo\nthree\npart");
    {
        const int fd = ::open(log_times_path(log).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        REQUIRE(fd >= 0);
        CHECK(append_log_time(fd, 0, 1000) == 0);  // "one\ntwo\n" in one chunk
        CHECK(append_log_time(fd, 8, 2000) == 0);  // "three\npart"
        ::close(fd);
    }
    auto all = read_log_chunk(log, 5, LogStream::Out, std::nullopt, 100);
    CHECK(all.kept);
    REQUIRE(all.lines.size() == 3);
    CHECK(all.lines[0] == LogLine{5, LogStream::Out, 1000, "one"});
    CHECK(all.lines[1] == LogLine{5, LogStream::Out, 1000, "two"});
    CHECK(all.lines[2] == LogLine{5, LogStream::Out, 2000, "three"});
    CHECK(all.next_offset == 14);  // the partial line waits for its end

    auto tail = read_log_chunk(log, 5, LogStream::Out, std::nullopt, 1);
    REQUIRE(tail.lines.size() == 1);
    CHECK(tail.lines[0].text == "three");

    auto after = read_log_chunk(log, 5, LogStream::Out, 4, 1);
    REQUIRE(after.lines.size() == 2);  // from an offset: every line, not a tail
    CHECK(after.lines[0].text == "two");

    auto missing = read_log_chunk(dir.path + "/none.log", 5, LogStream::Err, std::nullopt, 10);
    CHECK(missing.lines.empty());
    write_file(dir.path + "/redirected.log", "a\n");  // no sidecar: no time
    auto untimed = read_log_chunk(dir.path + "/redirected.log", 1, LogStream::Out, {}, 10);
    REQUIRE(untimed.lines.size() == 1);
    CHECK_FALSE(untimed.lines[0].unix_us);
}

TEST_CASE("read_log_chunk cuts long lines and reads a bounded window", "[logs]") {
    TempDir dir;
    const std::string log = dir.path + "/stderr.log";
    write_file(log, std::string(kMaxLogReadBytes + 10, 'x') + "\nlast\n");
    auto chunk = read_log_chunk(log, 0, LogStream::Err, std::nullopt, 100);
    REQUIRE(chunk.lines.size() == 1);  // the window starts inside the long line: skipped
    CHECK(chunk.lines[0].text == "last");
    auto from_start = read_log_chunk(log, 0, LogStream::Err, 0, 100);
    REQUIRE(from_start.lines.size() == 1);
    CHECK(from_start.lines[0].text.size() == kMaxLogLineBytes);
    CHECK(from_start.next_offset == kMaxLogReadBytes);
}

TEST_CASE("the /logs answer round-trips and hostile answers are refused", "[logs]") {
    LogChunk out{2, LogStream::Out, true, 30, {LogLine{2, LogStream::Out, 1500, "a b\r"}},
                 0, false};
    LogChunk err{2, LogStream::Err, false, 0, {}, 0, false};
    const auto text = logs_answer_text({out, err});
    auto parsed = parse_logs_answer(text, 2);
    REQUIRE(parsed);
    REQUIRE(parsed->size() == 2);
    CHECK((*parsed)[0].lines == out.lines);
    CHECK((*parsed)[0].next_offset == 30);
    CHECK_FALSE((*parsed)[1].kept);
    CHECK((*parsed)[0].files == 0);
    out.files = err.files = 4;
    parsed = parse_logs_answer(logs_answer_text({out, err}), 2);
    REQUIRE(parsed);
    CHECK((*parsed)[1].files == 4);
    CHECK_FALSE(parse_logs_answer("ptrun-logs 1\nA 3 1\nF 2 out 0 1\n", 2));  // another rank
    CHECK_FALSE(parse_logs_answer("ptrun-logs 1\nA 2 1\nA 2 1\nF 2 out 0 1\n", 2));
    CHECK_FALSE(parse_logs_answer(text, 3));  // another rank's lines
    CHECK_FALSE(parse_logs_answer("HTTP/1.1 200 OK\n", 2));
    CHECK_FALSE(parse_logs_answer("ptrun-logs 1\nL 2 out 5 x\n", 2));  // a line before its F
    CHECK_FALSE(parse_logs_answer("ptrun-logs 1\nF 2 out 0 1\nL 2 out 5 cut", 2));
}

TEST_CASE("merge_by_time orders lines across sources and keeps each source's order", "[logs]") {
    auto line = [](std::string src, std::optional<std::int64_t> ms, std::string text) {
        return SourcedLine{std::move(src), LogLine{0, LogStream::Out, ms, std::move(text)}};
    };
    auto merged = merge_by_time({
        {line("a:0", 10, "a1"), line("a:0", std::nullopt, "a2"), line("a:0", 30, "a3")},
        {line("b:1", 5, "b1"), line("b:1", 20, "b2"), line("b:1", 3, "b3 (clock stepped back)")},
    });
    std::vector<std::string> order;
    for (const auto& l : merged) order.push_back(l.line.text);
    CHECK(order ==
          std::vector<std::string>{"b1", "a1", "a2", "b2", "b3 (clock stepped back)", "a3"});
}

TEST_CASE("job_log_nodes finds every node's ranks and published endpoint", "[logs]") {
    const std::string doc =
        R"({"run_id":"r","host":"n1","node_rank":0,"healthy":true,"node_states":[)"
        R"({"host":"n1","node_rank":0,"health_endpoint":"0.0.0.0:9"},)"
        R"({"host":"n2","node_rank":1,"health_endpoint":"10.0.0.2:29501"},)"
        R"({"host":"n3","node_rank":2,"health_endpoint":"[fd00::3]:7"},)"
        R"({"host":"n4","node_rank":3,"health_endpoint":null}],"workers":[)"
        R"({"host":"n1","node_rank":0,"rank":1},{"host":"n2","node_rank":1,"rank":2},)"
        R"({"host":"n3","node_rank":2,"rank":3},{"host":"n4","node_rank":3,"rank":4},)"
        R"({"host":"n1","node_rank":0,"rank":0}]})";
    auto nodes = job_log_nodes(doc, "127.0.0.1", 8000);
    REQUIRE(nodes);
    REQUIRE(nodes->size() == 4);
    // The asked node is reached where it was asked, whatever it published.
    CHECK((*nodes)[0].host == "n1");
    CHECK((*nodes)[0].endpoint_host == "127.0.0.1");
    CHECK((*nodes)[0].endpoint_port == 8000);
    CHECK((*nodes)[0].ranks == std::vector<int>{0, 1});
    CHECK((*nodes)[1].endpoint_host == "10.0.0.2");
    CHECK((*nodes)[1].endpoint_port == 29501);
    CHECK((*nodes)[1].ranks == std::vector<int>{2});
    CHECK((*nodes)[2].endpoint_host == "fd00::3");
    CHECK((*nodes)[3].endpoint_host.empty());
    CHECK((*nodes)[3].ranks == std::vector<int>{4});
    CHECK_FALSE(job_log_nodes("{}", "h", 1));
    CHECK_FALSE(job_log_nodes("not json", "h", 1));
}
