#include "ptrun/launcher/process/short_slice.hpp"

#include <sys/syscall.h>
#include <unistd.h>

namespace ptrun::launcher {
namespace {

constexpr std::uint32_t kSchedOther = 0;  // SCHED_NORMAL
constexpr std::uint32_t kSchedBatch = 3;
constexpr std::uint64_t kResetOnFork = 0x01;  // SCHED_FLAG_RESET_ON_FORK

/// The kernel's struct sched_attr, first version (SCHED_ATTR_SIZE_VER0), which every kernel with
/// sched_setattr takes; spelled here as <linux/sched/types.h> clashes with <sched.h>.
struct RawSchedAttr {
    std::uint32_t size;
    std::uint32_t sched_policy;
    std::uint64_t sched_flags;
    std::int32_t sched_nice;
    std::uint32_t sched_priority;
    std::uint64_t sched_runtime;
    std::uint64_t sched_deadline;
    std::uint64_t sched_period;
};
static_assert(sizeof(RawSchedAttr) == 48);

}  // namespace

std::optional<SchedAttributes> thread_sched_attributes(pid_t tid) {
    RawSchedAttr raw{};
    if (::syscall(SYS_sched_getattr, tid, &raw, sizeof raw, 0) != 0) return std::nullopt;
    return SchedAttributes{raw.sched_policy, raw.sched_flags, raw.sched_nice, raw.sched_runtime};
}

bool set_thread_sched_attributes(const SchedAttributes& a) {
    RawSchedAttr raw{};
    raw.size = sizeof raw;
    raw.sched_policy = a.policy;
    // Only the flag a thread may set for itself; the utilization clamps stay as they are.
    raw.sched_flags = a.flags & kResetOnFork;
    raw.sched_nice = a.nice;
    raw.sched_runtime = a.runtime_ns;
    return ::syscall(SYS_sched_setattr, 0, &raw, 0) == 0;
}

ShortSlice::ShortSlice() {
    const auto now = thread_sched_attributes();
    // sched_getattr says a fair thread's current slice (the default one included): one at or
    // below ours is left alone.
    if (!now || (now->policy != kSchedOther && now->policy != kSchedBatch) ||
        now->runtime_ns <= kSliceNs)
        return;
    SchedAttributes shorter = *now;
    shorter.runtime_ns = kSliceNs;
    if (!set_thread_sched_attributes(shorter)) return;
    const auto after = thread_sched_attributes();
    if (!after || after->runtime_ns != kSliceNs) {  // a kernel without custom slices ignores it
        set_thread_sched_attributes(*now);
        return;
    }
    original_ = now;
}

ShortSlice::~ShortSlice() {
    if (original_) set_thread_sched_attributes(*original_);
}

}  // namespace ptrun::launcher
