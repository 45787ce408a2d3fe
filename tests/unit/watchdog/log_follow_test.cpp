#include "ptrun/watchdog/log_follow.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "ptrun/watchdog/log_followers.hpp"

using namespace ptrun::watchdog;

TEST_CASE("parse_logs_wait_query takes seen and a bounded wait, and nothing else", "[logs]") {
    std::string error;
    CHECK(is_logs_wait_query("seen=3&wait=100"));
    CHECK_FALSE(is_logs_wait_query("rank=0"));
    auto q = parse_logs_wait_query("seen=3&wait=100", &error);
    REQUIRE(q);
    CHECK(*q == LogsWaitQuery{3, std::chrono::milliseconds(100)});
    CHECK(parse_logs_wait_query(logs_wait_query_text(*q), &error) == q);
    for (const char* bad : {"", "seen=", "seen=1", "seen=1&wait=", "seen=1&wait=3001",
                            "seen=-1&wait=1", "wait=1&seen=1", "seen=1&wait=1&x=2",
                            "seen=99999999999999999999&wait=1", "seen=1&wait=1a"}) {
        INFO(bad);
        CHECK_FALSE(parse_logs_wait_query(bad, &error));
        CHECK_FALSE(error.empty());
    }
    CHECK_FALSE(parse_logs_wait_query("seen=1&wait=1&" + std::string(100, 'a'), &error));
}

TEST_CASE("the long-poll answer round-trips and hostile answers are refused", "[logs]") {
    for (const LogsWaitAnswer a : {LogsWaitAnswer{7, std::nullopt}, LogsWaitAnswer{0, 3}}) {
        CHECK(parse_logs_wait_answer(logs_wait_answer_text(a)) == a);
    }
    for (const char* bad :
         {"", "ptrun-logs-wait 1\n", "ptrun-logs-wait 1\nS x\n", "ptrun-logs-wait 1\nS 1",
          "ptrun-logs-wait 1\nS 1\nX 256\n", "ptrun-logs-wait 1\nS 1\nX 1\nX 2\n",
          "ptrun-logs-wait 2\nS 1\n", "ptrun-logs-wait 1\nS 1\nY 1\n"}) {
        INFO(bad);
        CHECK_FALSE(parse_logs_wait_answer(bad));
    }
}

TEST_CASE("LogFollowers holds a long-poll until a write, its wait, or the job's end", "[logs]") {
    using namespace std::chrono_literals;
    boost::asio::io_context io;
    LogFollowers followers(io);
    std::vector<std::pair<int, std::string>> replies;
    auto reply = [&replies](int status, std::string text) {
        replies.emplace_back(status, std::move(text));
    };
    CHECK_FALSE(followers.followed());
    followers.wait(LogsWaitQuery{0, 3000ms}, reply);
    CHECK(followers.followed());
    io.poll();
    CHECK(replies.empty());  // held: nothing written yet
    followers.written();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0] == std::pair<int, std::string>{200, "ptrun-logs-wait 1\nS 1\n"});
    followers.wait(LogsWaitQuery{0, 3000ms}, reply);  // saw an older count: answered at once
    CHECK(replies.size() == 2);

    replies.clear();
    for (std::size_t i = 0; i < kMaxLogFollowers; ++i) followers.wait({1, 3000ms}, reply);
    CHECK(replies.empty());
    followers.wait({1, 3000ms}, reply);  // one too many
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].first == 503);
    followers.ended(3);
    REQUIRE(replies.size() == 1 + kMaxLogFollowers);
    CHECK(replies.back() == std::pair<int, std::string>{200, "ptrun-logs-wait 1\nS 1\nX 3\n"});
    followers.wait({1, 3000ms}, reply);  // after the end: at once
    CHECK(replies.back().second == "ptrun-logs-wait 1\nS 1\nX 3\n");

    // Nothing written: answered when its wait passes, by its timer.
    LogFollowers quiet(io);
    replies.clear();
    quiet.wait({0, 20ms}, reply);
    io.restart();
    const auto end = std::chrono::steady_clock::now() + 5s;  // the earlier polls' timers run too
    while (replies.empty() && std::chrono::steady_clock::now() < end) io.run_one_until(end);
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].second == "ptrun-logs-wait 1\nS 0\n");
}

TEST_CASE("LogFollowers wakes a held poll when a watched log file is written", "[logs]") {
    using namespace std::chrono_literals;
    char name[] = "/tmp/log_follow_test.XXXXXX";
    const std::string dir = ::mkdtemp(name);
    const std::string log = dir + "/stdout.log";
    std::ofstream(log).flush();
    boost::asio::io_context io;
    LogFollowers followers(io);
    followers.watch(log);  // watched once someone follows
    std::vector<std::string> replies;
    auto reply = [&replies](int, std::string text) { replies.push_back(std::move(text)); };
    followers.wait(LogsWaitQuery{0, 3000ms}, reply);
    io.poll();
    CHECK(replies.empty());
    std::ofstream(log, std::ios::app) << "a line\n";         // as a worker writing its own file
    const auto end = std::chrono::steady_clock::now() + 2s;  // well before the poll's 3 s
    while (replies.empty() && std::chrono::steady_clock::now() < end) io.run_one_until(end);
    REQUIRE(replies.size() == 1);
    CHECK(replies[0] == "ptrun-logs-wait 1\nS 1\n");

    followers.unwatch_all();  // the next attempt's files are others
    io.poll();
    replies.clear();
    followers.wait(LogsWaitQuery{1, 50ms}, reply);
    std::ofstream(log, std::ios::app) << "unwatched\n";
    const auto later = std::chrono::steady_clock::now() + 5s;
    while (replies.empty() && std::chrono::steady_clock::now() < later) io.run_one_until(later);
    REQUIRE(replies.size() == 1);
    CHECK(replies[0] == "ptrun-logs-wait 1\nS 1\n");  // its wait passed: nothing counted
    std::filesystem::remove_all(dir);
}
