#include "ptrun/launcher/membership/session_stores.hpp"

#include <catch2/catch.hpp>
#include <future>

#include "ptrun/rendezvous/file_store.hpp"
#include "ptrun/rendezvous/in_memory_store.hpp"
#include "temp_dir.hpp"

using namespace ptrun::launcher;
using namespace std::chrono_literals;
using Role = SessionStores::Role;
using ptrun::rdzv::Store;

namespace {

std::string read(SessionStores& stores, Role role, const std::string& key,
                 std::chrono::milliseconds timeout) {
    return stores.wait(role, timeout, [&](Store& store, std::chrono::milliseconds left) {
        return store.get(key, left);
    });
}

}  // namespace

TEST_CASE(
    "session stores: one shared connection, a short call cuts a long wait short and it "
    "resumes",
    "[launcher][session_stores]") {
    ptrun::rdzv::InMemoryStore data;
    int opened = 0;
    SessionStores stores(
        [&](std::chrono::milliseconds) -> std::unique_ptr<Store> {
            ++opened;
            return data.connect();
        },
        10s, 5s);
    CHECK(stores.shared());
    CHECK(opened == 1);
    auto watched =
        std::async(std::launch::async, [&] { return read(stores, Role::Watch, "end", 60s); });
    // Whether the wait has begun or not, the beat goes through at once, many times over.
    const auto start = std::chrono::steady_clock::now();
    for (int i = 1; i <= 20; ++i) {
        CHECK(stores.call(Role::Beat, [](Store& s) { return s.add("beat", 1); }) == i);
    }
    CHECK(std::chrono::steady_clock::now() - start < 10s);
    CHECK(watched.wait_for(0s) == std::future_status::timeout);  // still waiting
    data.set("end", "done");
    CHECK(watched.get() == "done");
}

TEST_CASE("session stores: a wait cut short still times out at its own deadline",
          "[launcher][session_stores]") {
    ptrun::rdzv::InMemoryStore data;
    SessionStores stores([&](std::chrono::milliseconds) { return data.connect(); }, 10s, 5s);
    const auto start = std::chrono::steady_clock::now();
    auto waited =
        std::async(std::launch::async, [&] { return read(stores, Role::Join, "never", 300ms); });
    stores.call(Role::Beat, [](Store& s) { s.add("beat", 1); });
    CHECK_THROWS_AS(waited.get(), ptrun::rdzv::StoreTimeout);
    CHECK(std::chrono::steady_clock::now() - start >= 300ms);
}

TEST_CASE("session stores: a store that cannot wake gets a connection per role",
          "[launcher][session_stores]") {
    ptrun::launcher::test::TempDir dir;
    std::vector<std::chrono::milliseconds> timeouts;
    SessionStores stores(
        [&](std::chrono::milliseconds io) -> std::unique_ptr<Store> {
            timeouts.push_back(io);
            return std::make_unique<ptrun::rdzv::FileStore>(
                ptrun::rdzv::FileStoreOptions{(dir.path / "rdzv").string()});
        },
        10s, 5s);
    CHECK_FALSE(stores.shared());
    CHECK(timeouts == std::vector<std::chrono::milliseconds>{5s, 10s, 10s});  // beat, join, watch
    stores.call(Role::Beat, [](Store& s) { s.set("k", "v"); });
    CHECK(read(stores, Role::Watch, "k", 5s) == "v");
}
