// ptrun's short scheduling slice (short_slice.hpp): held by the thread that took it, given back at
// its end, and never inherited by a worker. On the test runner's thread (the slice's destructor
// gives it its own back): a vfork-style spawn from another thread confuses ThreadSanitizer.
#include "ptrun/launcher/process/short_slice.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>

#include "ptrun/launcher/process/spawn.hpp"

using namespace ptrun::launcher;

namespace {

bool same(const SchedAttributes& a, const SchedAttributes& b) {
    return a.policy == b.policy && a.nice == b.nice && a.runtime_ns == b.runtime_ns;
}

}  // namespace

TEST_CASE("a short slice is the taking thread's until its end", "[launcher][spawn]") {
    const auto before = thread_sched_attributes();
    REQUIRE(before);
    {
        ShortSlice slice;
        const auto during = thread_sched_attributes();
        REQUIRE(during);
        if (slice.original()) {  // Linux 6.12+: custom slices
            CHECK(during->runtime_ns == ShortSlice::kSliceNs);
            CHECK(same(*slice.original(), *before));
        } else {  // nothing changed where the kernel has none, or the slice was short
            CHECK(same(*during, *before));
        }
    }
    const auto after = thread_sched_attributes();
    REQUIRE(after);
    CHECK(same(*after, *before));
}

TEST_CASE("a worker starts with ptrun's own slice, not its short one", "[launcher][spawn]") {
    const auto own = thread_sched_attributes();
    REQUIRE(own);
    ShortSlice slice;
    // The slice a worker spawned with `attributes` runs with.
    auto worker_attributes = [](const SchedAttributes* attributes) {
        SpawnRequest request;
        request.exec_path = "/bin/sleep";
        request.argv = {"sleep", "60"};
        request.sched_attributes = attributes;
        const pid_t pid = spawn_worker(request);  // returns once it has exec'd
        const auto worker = thread_sched_attributes(pid);
        ::kill(pid, SIGKILL);
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        REQUIRE(worker);
        return *worker;
    };
    CHECK(same(worker_attributes(slice.original()), *own));
    // Without them the child would have kept the short slice: what the restore is for.
    if (slice.original()) CHECK(worker_attributes(nullptr).runtime_ns == ShortSlice::kSliceNs);
}
