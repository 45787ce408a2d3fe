#include "ptrun/launcher/membership/join_queue.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

using namespace ptrun::launcher;

namespace {

JoinEvent join(const std::string& id, int seq = 1) {
    JoinEvent e;
    e.node.id = id;
    e.seq = seq;
    return e;
}

std::vector<std::string> ids(const JoinQueue& q) {
    std::vector<std::string> out;
    for (const auto& j : q) out.push_back(j.node.id);
    return out;
}

}  // namespace

TEST_CASE("join queue: a node joining again keeps its place with its new seq", "[join_queue]") {
    JoinQueue q;
    q.put(join("a"));
    q.put(join("b"));
    q.put(join("a", 2));
    CHECK(ids(q) == std::vector<std::string>{"a", "b"});
    REQUIRE(q.find("a"));
    CHECK(q.find("a")->seq == 2);
    CHECK_FALSE(q.find("c"));
}

TEST_CASE("join queue: erasing keeps the others' order and their lookups", "[join_queue]") {
    JoinQueue q;
    for (const auto* id : {"a", "b", "c", "d"}) q.put(join(id));
    CHECK(q.erase("b"));
    CHECK_FALSE(q.erase("b"));
    CHECK(ids(q) == std::vector<std::string>{"a", "c", "d"});
    CHECK(q.find("d")->node.id == "d");
    q.erase_if([](const JoinEvent& j) { return j.node.id == "a"; });
    CHECK(ids(q) == std::vector<std::string>{"c", "d"});
    CHECK(q.contains("c"));
    CHECK_FALSE(q.contains("a"));
    const auto taken = q.take_at(q.begin() + 1);
    CHECK(taken.node.id == "d");
    CHECK(ids(q) == std::vector<std::string>{"c"});
    CHECK(q.find("c")->node.id == "c");
}

TEST_CASE("join queue: take admits the preferred first, then the others, in join order",
          "[join_queue]") {
    JoinQueue q;
    for (const auto* id : {"new1", "old1", "new2", "old2", "new3"}) q.put(join(id));
    const auto taken = q.take(3, [](const JoinEvent& j) { return j.node.id.starts_with("old"); });
    std::vector<std::string> got;
    for (const auto& j : taken) got.push_back(j.node.id);
    CHECK(got == std::vector<std::string>{"old1", "old2", "new1"});
    CHECK(ids(q) == std::vector<std::string>{"new2", "new3"});
    CHECK(q.find("new3")->node.id == "new3");
    CHECK_FALSE(q.contains("old1"));
    CHECK(q.take_all().size() == 2);
    CHECK(q.empty());
    CHECK_FALSE(q.contains("new2"));
}

TEST_CASE("join queue: 16,384 nodes, erased and taken in every way, each found in its place",
          "[join_queue]") {
    JoinQueue q;
    constexpr int kNodes = 16384;
    for (int i = 0; i < kNodes; ++i) q.put(join("n" + std::to_string(i), i));
    std::vector<std::string> expected;
    for (int i = 0; i < kNodes; ++i) expected.push_back("n" + std::to_string(i));
    auto drop_expected = [&](const std::string& id) {
        expected.erase(std::find(expected.begin(), expected.end(), id));
    };
    for (int i = 0; i < kNodes; i += 97) {  // one by one, from everywhere in the queue
        CHECK(q.erase("n" + std::to_string(i)));
        drop_expected("n" + std::to_string(i));
    }
    q.erase_if([](const JoinEvent& j) { return j.seq % 5 == 1; });
    std::erase_if(expected, [](const std::string& id) { return std::stoi(id.substr(1)) % 5 == 1; });
    const auto at = q.take_at(q.begin() + 1000);
    drop_expected(at.node.id);
    const auto taken = q.take(3000, [](const JoinEvent& j) { return j.seq % 2 == 0; });
    // take leaves the preferred before the others, each in join order
    std::stable_partition(expected.begin(), expected.end(),
                          [](const std::string& id) { return std::stoi(id.substr(1)) % 2 == 0; });
    for (const auto& j : taken) drop_expected(j.node.id);
    REQUIRE(ids(q) == expected);
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto* found = q.find(expected[i]);
        REQUIRE(found != nullptr);
        CHECK(found == &*(q.begin() + static_cast<std::ptrdiff_t>(i)));
    }
    CHECK_FALSE(q.contains(at.node.id));
    for (const auto& j : taken) CHECK_FALSE(q.contains(j.node.id));
}
