#include "wire.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::etcd;
using namespace ptrun::etcd::detail;

TEST_CASE("etcd wire decodes etcd's replies with omitted zero fields", "[etcd][wire]") {
    auto r =
        decode_range(parse_json(R"({"header":{"revision":"7"},"kvs":[{"key":"Zm9v",)"
                                R"("create_revision":"2","mod_revision":"5","version":"3"}]})"));
    CHECK(r.revision == 7);
    REQUIRE(r.kvs.size() == 1);
    CHECK(r.kvs[0].key == "foo");
    CHECK(r.kvs[0].value == "");
    CHECK(r.kvs[0].version == 3);
    CHECK(r.count == 0);
    CHECK(decode_range(parse_json(R"({"header":{"revision":"1"}})")).kvs.empty());
    auto t = decode_txn(parse_json(
        R"({"header":{"revision":"3"},"succeeded":true,"responses":[{"response_put":{}},)"
        R"({"response_range":{"kvs":[{"key":"eA==","value":"eQ=="}]}}]})"));
    CHECK(t.succeeded);
    REQUIRE(t.ranges.size() == 1);
    CHECK(t.ranges[0][0].value == "y");
    auto w = decode_watch(parse_json(
        R"({"result":{"events":[{"kv":{"key":"eA=="}},{"type":"DELETE","kv":{"key":"eA=="}}]}})"));
    REQUIRE(w.events.size() == 2);
    CHECK(w.events[0].type == WatchEvent::Type::Put);
    CHECK(w.events[1].type == WatchEvent::Type::Delete);
    CHECK(w.revision == 0);  // no header
    auto created = decode_watch(
        parse_json(R"({"result":{"header":{"revision":"42","raft_term":"2"},"created":true}})"));
    CHECK(created.created);
    CHECK(created.revision == 42);
}

TEST_CASE("etcd wire throws Malformed for hostile replies, naming what is wrong", "[etcd][wire]") {
    CHECK_THROWS_AS(parse_json("{\"header\":"), Malformed);
    CHECK_THROWS_AS(parse_json("[1,2]"), Malformed);
    CHECK_THROWS_WITH(decode_range(parse_json(R"({"kvs":[{"key":"!!"}]})")),
                      Catch::Contains("'key' is not base64"));
    CHECK_THROWS_WITH(decode_range(parse_json(R"({"header":{"revision":"12x"}})")),
                      Catch::Contains("'revision'"));
    CHECK_THROWS_AS(decode_range(parse_json(R"({"kvs":{"a":1}})")), Malformed);
    CHECK_THROWS_AS(decode_range(parse_json(R"({"kvs":[17]})")), Malformed);
    CHECK_THROWS_AS(decode_range(parse_json(R"({"header":{"revision":"99999999999999999999"}})")),
                    Malformed);
    CHECK_THROWS_AS(decode_watch(parse_json(R"({"result":{"events":[{"type":"EXPLODE"}]}})")),
                    Malformed);
    CHECK_THROWS_AS(decode_txn(parse_json(R"({"responses":[1]})")), Malformed);
    std::string deep(100000, '[');
    CHECK_THROWS_AS(parse_json(deep), Malformed);
}

TEST_CASE("etcd wire reads both error shapes of the gateway", "[etcd][wire]") {
    auto unary = decode_error_body(
        R"({"error":"etcdserver: no leader","message":"etcdserver: no leader","code":14})");
    CHECK(unary.code == 14);
    CHECK(unary.message == "etcdserver: no leader");
    auto stream = decode_error_body(
        R"({"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader"}})");
    CHECK(stream.code == 14);
    CHECK(stream.message == "etcdserver: no leader");
    CHECK(decode_error_body("<html>\x01").message == "'<html>?'");
}
