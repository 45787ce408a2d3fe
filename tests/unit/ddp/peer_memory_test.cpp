#include "peer_memory.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <vector>

#include "ptrun/ddp/errors.hpp"

using namespace ptrun::ddp;
using namespace ptrun::ddp::detail;

namespace {

std::uint64_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// The pid of a child that has exited and been reaped.
int gone_pid() {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    return static_cast<int>(child);
}

}  // namespace

TEST_CASE("peer memory reads and writes a process's memory through its pid", "[ddp]") {
    // This process as local rank 0 (the unit tests run ranks as threads of one process).
    const PeerMemory peers({static_cast<int>(::getpid())}, {5});
    std::vector<std::uint32_t> theirs(3 * 1024 * 1024 / 4 + 7), mine(theirs.size());
    std::iota(theirs.begin(), theirs.end(), 1U);
    peers.read(0, mine.data(), address(theirs.data()), theirs.size() * 4, "test");
    CHECK(mine == theirs);
    std::iota(mine.begin(), mine.end(), 100U);
    peers.write(0, address(theirs.data() + 1), mine.data(), 4, "test");
    CHECK(theirs[0] == 1);
    CHECK(theirs[1] == 100);
    CHECK(theirs[2] == 3);
}

TEST_CASE("peer memory names the rank whose process is gone", "[ddp]") {
    const PeerMemory peers({gone_pid()}, {7});
    std::uint64_t word = 0;
    CHECK_THROWS_AS(peers.read(0, &word, address(&word), sizeof word, "allreduce"), PeerLost);
    CHECK_THROWS_WITH(peers.write(0, address(&word), &word, sizeof word, "allreduce"),
                      Catch::Contains("allreduce: lost rank 7"));
}

TEST_CASE("peer memory reach check reads the expected word or says why not", "[ddp]") {
    const PeerMemory peers({static_cast<int>(::getpid()), gone_pid()}, {0, 1});
    const std::uint64_t word = 0x1234;
    std::string why;
    CHECK(peers.reachable(0, address(&word), 0x1234, &why));
    CHECK_FALSE(peers.reachable(0, address(&word), 0x4321, &why));
    CHECK_THAT(why, Catch::Contains("read back wrong"));
    CHECK_FALSE(peers.reachable(0, 8, 0x1234, &why));  // not mapped
    CHECK_THAT(why, Catch::Contains("process_vm_readv from rank 0"));
    CHECK_FALSE(peers.reachable(1, address(&word), 0x1234, &why));
    CHECK_THAT(why, Catch::Contains("lost rank 1"));
}
