// --from-launcher before the agent runs: the launching ptrun's pipe's end is seen at once by the
// watch's thread, data on it is not an end, and destroying the watch stops it without a call.
#include "ptrun/launcher/hosts/launcher_pipe_watch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "ptrun/sys/fd.hpp"
#include "test_pipe.hpp"

using ptrun::launcher::LauncherPipeWatch;
using ptrun::launcher::test::Pipe;
using ptrun::sys::Fd;

namespace {

/// How many times the watch called back, waited for with a deadline.
struct Calls {
    std::mutex mutex;
    std::condition_variable changed;
    int count = 0;

    void add() {
        std::lock_guard lock(mutex);
        ++count;
        changed.notify_all();
    }
    /// True when `n` calls came within `deadline`.
    bool wait_for(int n, std::chrono::milliseconds deadline) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, deadline, [&] { return count >= n; });
    }
};

}  // namespace

TEST_CASE("LauncherPipeWatch: the pipe's end-of-file calls back once", "[hosts]") {
    Pipe pipe;
    Calls calls;
    LauncherPipeWatch watch(pipe.read.get(), [&calls] { calls.add(); });
    REQUIRE(::write(pipe.write.get(), "x", 1) == 1);  // data: discarded, not an end
    CHECK_FALSE(calls.wait_for(1, std::chrono::milliseconds(100)));
    pipe.write.reset();
    CHECK(calls.wait_for(1, std::chrono::seconds(10)));
    CHECK(calls.count == 1);
}

TEST_CASE("LauncherPipeWatch: destroyed while the pipe is open, it stops without a call",
          "[hosts]") {
    Pipe pipe;
    Calls calls;
    const auto t0 = std::chrono::steady_clock::now();
    {
        LauncherPipeWatch watch(pipe.read.get(), [&calls] { calls.add(); });
    }
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
    pipe.write.reset();  // after the watch: nobody is called
    CHECK(calls.count == 0);
}
