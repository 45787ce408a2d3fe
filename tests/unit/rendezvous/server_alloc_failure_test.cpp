// A failed allocation on the server thread closes only the connection that needed the memory.
// This binary replaces the global operator new so that a test can make large allocations on
// other threads (the server's) fail, as they do in a process near its address-space limit.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>
#include <thread>

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "raw_connection.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::test;

namespace {

std::atomic<std::size_t> fail_above{SIZE_MAX};  ///< bytes; only off the test's own thread
std::atomic<std::thread::id> spared{};

void* allocate(std::size_t n) {
    if (n > fail_above.load(std::memory_order_relaxed) &&
        std::this_thread::get_id() != spared.load(std::memory_order_relaxed)) {
        throw std::bad_alloc();
    }
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}

/// Makes allocations above `bytes` fail on every thread but this one while it lives.
class FailLargeAllocations {
  public:
    explicit FailLargeAllocations(std::size_t bytes) {
        spared.store(std::this_thread::get_id());
        fail_above.store(bytes);
    }
    ~FailLargeAllocations() { fail_above.store(SIZE_MAX); }
};

std::string ping_req(std::uint32_t nonce) { return bytes({0x0D}) + u32(nonce); }

}  // namespace

// Every replaceable form that pairs with the plain deletes (the aligned ones keep the runtime's).
void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    try {
        return allocate(n);
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}
void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept {
    return operator new(n, tag);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

TEST_CASE("a failed allocation closes only the connection that needed it", "[rdzv][server]") {
    TcpStoreServerOptions options;
    options.host = "127.0.0.1";
    TcpStoreServer server(options);
    RawConnection other(server.port());
    other.send(validate() + ping_req(1));
    REQUIRE(other.read(4) == u32(1));
    {
        const FailLargeAllocations fail(1 << 20);
        // A legal SET of a 4 MiB value, cut short: buffering it needs more than 1 MiB.
        RawConnection big(server.port());
        try {
            big.send(validate() + bytes({0x01}) + field("k") + u64(4 << 20) +
                     std::string(2 << 20, 'x'));
        } catch (const ConnectionLost&) {  // closed before it took all of it
        }
        CHECK(big.closed_by_server());
        other.send(ping_req(2));
        CHECK(other.read(4) == u32(2));
    }
    // 300 keys of 4 KiB: LIST_KEYS has to copy 1.2 MB of names into its reply.
    RawConnection writer(server.port());
    std::string sets = validate();
    for (int i = 0; i < 300; ++i) {
        sets += bytes({0x01}) + field(std::to_string(i) + std::string(4096, 'k')) + field("v");
    }
    writer.send(sets + ping_req(3));
    REQUIRE(writer.read(4) == u32(3));
    {
        const FailLargeAllocations fail(1 << 20);
        RawConnection lister(server.port());
        lister.send(validate() + bytes({0x11}));  // LIST_KEYS: the reply cannot be built
        CHECK(lister.closed_by_server());
        RawConnection fresh(server.port());  // accepting goes on
        fresh.send(validate() + ping_req(4));
        CHECK(fresh.read(4) == u32(4));
        other.send(ping_req(5));
        CHECK(other.read(4) == u32(5));
    }
    CHECK_NOTHROW(server.stop());  // nothing escaped a handler
}
