#pragma once
/// A ProcessGroup for tests: N ranks as threads of one process, sharing memory through FakeWorld.
/// Implements allreduce, broadcast, allgather and barrier for every DType; a wait gives up with
/// CollectiveTimeout after a bounded deadline, so a mismatched test fails instead of hanging.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ptrun/ddp/process_group.hpp"

namespace ptrun::ddp::testing {

class FakeWorld {
  public:
    explicit FakeWorld(int size, std::chrono::milliseconds timeout = std::chrono::seconds(20))
        : size_(size), timeout_(timeout) {}

    int size() const { return size_; }
    /// Collectives completed so far (counted once per collective, not per rank).
    std::size_t completed() const;
    /// Allreduces issued by `rank` so far.
    std::size_t allreduces_issued(int rank) const;

    struct Op;
    /// Rank `rank` joins collective number `seq`; the last rank to join performs it.
    std::shared_ptr<Op> join(int rank, std::uint64_t seq, const Op& mine);
    void wait(const std::shared_ptr<Op>& op);
    bool is_done(const std::shared_ptr<Op>& op) const;

  private:
    int size_;
    std::chrono::milliseconds timeout_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::uint64_t, std::shared_ptr<Op>> pending_;
    std::size_t completed_ = 0;
    std::map<int, std::size_t> allreduces_;
};

/// One rank's view of a FakeWorld.
class FakeGroup : public ProcessGroup {
  public:
    FakeGroup(FakeWorld& world, int rank) : world_(world), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return world_.size(); }
    std::string backend_name() const override { return "fake"; }
    WorkPtr allreduce(void* data, std::size_t count, DType dtype, ReduceOp op) override;
    WorkPtr broadcast(void* data, std::size_t count, DType dtype, int root) override;
    WorkPtr allgather(const void* in, void* out, std::size_t count_per_rank, DType dtype) override;
    WorkPtr reduce_scatter(const void* in, void* out, std::size_t count_per_rank, DType dtype,
                           ReduceOp op) override;
    WorkPtr barrier() override;

  private:
    WorkPtr issue(const FakeWorld::Op& mine);
    FakeWorld& world_;
    int rank_;
    std::uint64_t seq_ = 0;
};

/// Runs fn(rank) on `size` threads; rethrows the first exception any rank threw.
void run_ranks(int size, const std::function<void(int)>& fn);

}  // namespace ptrun::ddp::testing
