// GenerationWatch: the nccl backend's news that the launcher began the next generation, from one
// blocking WAIT against a real store server (the test plays ptrun's part in the keys).
#include "generation_watch.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "ptrun/env/generation_keys.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

using ptrun::ddp::detail::GenerationWatch;
namespace keys = ptrun::env::generation_keys;
using namespace std::chrono_literals;

namespace {

/// Whether `watch` says the next generation began within `limit`.
bool begun_within(const GenerationWatch& watch, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!watch.next_begun()) {
        if (std::chrono::steady_clock::now() >= end) return false;
        std::this_thread::sleep_for(1ms);  // the test's own bounded look at an atomic
    }
    return true;
}

}  // namespace

TEST_CASE("generation watch: the next generation's begun key is news, another's is not",
          "[ddp][recovery][generation_watch]") {
    ptrun::rdzv::TcpStoreServer server({.host = "127.0.0.1", .port = 0});
    ptrun::rdzv::TcpStoreClient ptrun({.host = "127.0.0.1", .port = server.port()});
    GenerationWatch watch("127.0.0.1", server.port(), 2, 5s);
    CHECK(watch.next() == 3);
    ptrun.set(keys::begun(2), "1");  // this group's own generation: old news
    CHECK_FALSE(begun_within(watch, 100ms));
    ptrun.set(keys::begun(3), "0,2");
    CHECK(begun_within(watch, 10s));
}

TEST_CASE("generation watch: destroyed while waiting, it returns at once",
          "[ddp][recovery][generation_watch]") {
    ptrun::rdzv::TcpStoreServer server({.host = "127.0.0.1", .port = 0});
    const auto start = std::chrono::steady_clock::now();
    {
        GenerationWatch watch("127.0.0.1", server.port(), 0, 5s);
        CHECK_FALSE(watch.next_begun());
    }
    CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("generation watch: no store to watch is an error naming it",
          "[ddp][recovery][generation_watch]") {
    ptrun::rdzv::TcpStoreServer server({.host = "127.0.0.1", .port = 0});
    const int port = server.port();
    server.stop();
    CHECK_THROWS_AS(GenerationWatch("127.0.0.1", port, 0, 200ms), ptrun::rdzv::StoreError);
}
