#pragma once
/// ptrun's scheduling slice while it supervises workers. ptrun sleeps nearly always and should run
/// the moment it wakes (a worker exec'd or exited, a signal came), while its workers are CPU-bound
/// from their first instruction (the loader alone costs ~0.5 ms on a VM). Under EEVDF (Linux
/// 6.12+) a SCHED_OTHER thread may ask for a shorter slice (sched_attr.sched_runtime): its earlier
/// deadline lets it preempt a running worker when it wakes, instead of waiting out the worker's
/// slice. Measured on 2 vCPUs: a spawn loop of 8 no-op workers stalled ~3 ms at a time behind the
/// workers it had started (bench/RESULTS.md, "launch"). Workers never keep it: spawn_worker's
/// child restores ptrun's own attributes before exec.

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace ptrun::launcher {

/// The fields of the kernel's struct sched_attr that ptrun reads and restores.
struct SchedAttributes {
    std::uint32_t policy = 0;
    std::uint64_t flags = 0;
    std::int32_t nice = 0;
    std::uint64_t runtime_ns = 0;  ///< SCHED_OTHER / SCHED_BATCH: the thread's slice
};

/// Thread `tid`'s attributes (sched_getattr; 0: the calling thread's), nullopt when the kernel
/// refuses.
std::optional<SchedAttributes> thread_sched_attributes(pid_t tid = 0);

/// Sets the calling thread's attributes (sched_setattr); async-signal-safe, for a vfork child.
/// Returns false when the kernel refuses.
bool set_thread_sched_attributes(const SchedAttributes& attributes);

/// Holds a short slice for the thread that made it, and gives the thread its own slice back when
/// destroyed (on the same thread). Changes nothing where the thread runs another policy
/// (SCHED_FIFO, SCHED_IDLE, ...), already has a slice this short, or the kernel has no custom
/// slices (before 6.12: sched_runtime of SCHED_OTHER is ignored).
class ShortSlice {
  public:
    /// The slice ptrun asks for: the shortest EEVDF grants (0.1 ms).
    static constexpr std::uint64_t kSliceNs = 100'000;

    ShortSlice();
    ~ShortSlice();
    ShortSlice(const ShortSlice&) = delete;
    ShortSlice& operator=(const ShortSlice&) = delete;

    /// The attributes the thread had before, for a child to restore before exec; null when
    /// nothing was changed.
    const SchedAttributes* original() const { return original_ ? &*original_ : nullptr; }

  private:
    std::optional<SchedAttributes> original_;
};

}  // namespace ptrun::launcher
