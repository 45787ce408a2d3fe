#include <catch2/catch.hpp>
#include <chrono>

#include "etcd_server.hpp"
#include "ptrun/etcd/client.hpp"
#include "ptrun/etcd/errors.hpp"

using namespace ptrun::etcd;
using namespace ptrun::etcd::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST_CASE("etcd Client throws NoQuorum when the member it reaches has lost its quorum",
          "[etcd][client][quorum]") {
    EtcdCluster etcd(3);
    Client all(etcd.client_options());
    all.put("/q", "1");
    etcd.kill(1);
    etcd.kill(2);

    auto options = etcd.client_options();
    options.io_timeout = 1s;
    Client c(options);  // the survivor first, then the two dead members
    const auto start = Clock::now();
    // Until the survivor notices (one election timeout, 500 ms) a request may hang and time
    // out instead; then it answers "no leader" at once.
    bool no_quorum = false;
    std::string what;
    while (!no_quorum && Clock::now() - start < 10s) {
        try {
            c.put("/q", "2");
            FAIL("a put succeeded without quorum");
        } catch (const NoQuorum& e) {
            no_quorum = true;
            what = e.what();
        } catch (const ptrun::rdzv::ConnectionLost& e) {
            what = e.what();
        }
    }
    INFO(what);
    REQUIRE(no_quorum);
    CHECK(Clock::now() - start < 10s);
    CHECK_THAT(what, Catch::Contains("127.0.0.1:" + std::to_string(etcd.endpoint(0).port) +
                                     " said 'etcdserver: no leader'"));
    CHECK_THAT(what, Catch::Contains("connection refused"));
    CHECK_THROWS_AS(c.range("/q"), NoQuorum);
    CHECK_THROWS_AS(c.watch("/q", "", 1, 5s), NoQuorum);
}
