#pragma once
/// DataParallel: gradient averaging across ranks, overlapped with the backward pass.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ptrun/ddp/process_group.hpp"

namespace ptrun::ddp {

/// How gradients are grouped into collectives.
struct DataParallelOptions {
    /// Upper bound on a bucket's size; a parameter larger than this gets a bucket of its own.
    std::size_t bucket_bytes = std::size_t{25} << 20;
};

/// Where each parameter's gradient lives in the buckets (for tests and logs).
struct BucketLayout {
    std::vector<std::vector<std::size_t>> buckets;  ///< parameter indices, in bucket order
};

/// Registers float parameters with their gradient buffers and averages the gradients across the
/// group each step. Buckets are filled in reverse registration order (the order a backward pass
/// produces gradients when parameters are registered input to output). When the last gradient of
/// a bucket is marked ready, the bucket's allreduce is issued at once, while the backward pass goes
/// on; buckets are issued strictly in bucket order, so every rank issues the same collectives in
/// the same order whatever order it marks gradients in. Not thread-safe: one thread drives it.
/// Buffers stay owned by the caller and must outlive this object.
class DataParallel {
  public:
    /// `pg` must outlive this object.
    explicit DataParallel(ProcessGroup& pg, const DataParallelOptions& options = {});
    ~DataParallel();
    DataParallel(const DataParallel&) = delete;
    DataParallel& operator=(const DataParallel&) = delete;

    /// Registers `count` floats of parameter and gradient; returns the parameter's index. Only
    /// before the first broadcast_parameters/mark_grad_ready/finish (throws std::logic_error
    /// after).
    std::size_t add_parameter(std::string name, float* param, float* grad, std::size_t count);

    /// Copies rank 0's parameter values to every rank. Blocks; throws CollectiveError.
    void broadcast_parameters();

    /// The gradient of `index` is final for this step. May issue one or more bucket allreduces
    /// (non-blocking). Throws std::logic_error on an unknown index or one marked twice in a step.
    void mark_grad_ready(std::size_t index);

    /// Waits for every bucket and writes the averaged gradients back into the gradient buffers;
    /// resets for the next step. Throws std::logic_error naming the parameters never marked, or
    /// CollectiveError from the group (the step is then abandoned and state reset).
    void finish();

    /// How many bucket allreduces have been issued in the current step (overlap, for tests).
    std::size_t buckets_issued() const;

    /// The bucket assignment. The buckets are laid out by the first call of broadcast_parameters,
    /// mark_grad_ready, finish or layout; that first call is collective (one allgather checks that
    /// every rank registered the same sizes, else CollectiveError).
    BucketLayout layout() const;

    std::size_t parameter_count() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::ddp
