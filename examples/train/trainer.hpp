#pragma once
/// The `train` example's training loop, separate from main so that tests can drive it in-process.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "mlp.hpp"
#include "ptrun/ddp/errors.hpp"
#include "ptrun/ddp/process_group.hpp"
#include "ptrun/ddp/recovery.hpp"

namespace ptrun::examples {

struct TrainOptions {
    std::size_t epochs = 30;
    std::size_t global_batch = 48;    ///< samples per step over all ranks; divisible by world size
    std::size_t dataset_size = 1536;  ///< x_i = (i + 0.5) / n, y_i = sin(2 pi x_i)
    std::size_t hidden = 32;
    float lr = 1e-2f;
    std::uint64_t seed = 1;            ///< initial parameters and the shuffle
    std::string checkpoint_dir;        ///< empty: no checkpoints
    std::size_t checkpoint_every = 0;  ///< steps between checkpoints; 0: at the end of every epoch
    bool resume = false;               ///< start from the latest checkpoint in checkpoint_dir
    std::size_t bucket_bytes = std::size_t{25} << 20;
    /// Called on every rank after each finished step (1-based global step); tests and the
    /// --crash-at-step flag hook in here.
    std::function<void(std::uint64_t step)> after_step;
};

struct TrainResult {
    std::uint64_t steps = 0;         ///< global steps done in total, resumed ones included
    std::uint64_t resumed_from = 0;  ///< the checkpoint's step, 0 when not resumed
    double final_mse = 0;            ///< over the whole dataset, after training
    std::vector<Tensor> params;
};

/// Trains the MLP with data parallelism over `pg`: rank 0's initial parameters are broadcast; each
/// step every rank takes global_batch / size() samples of the DistributedSampler's epoch order, so
/// the step's global batch is the same set at every world size, and the gradients are averaged by
/// DataParallel. Rank 0 prints one line per epoch to `log` and writes checkpoints. Blocks; throws
/// std::invalid_argument on bad options, CollectiveError, CheckpointError.
TrainResult train(ptrun::ddp::ProcessGroup& pg, const TrainOptions& options, std::ostream& log);

/// How train() goes on after losing a peer (recovery in place: ptrun --restart-policy failed).
struct TrainRecovery {
    /// Drops the broken group, waits for the next generation, joins it and returns its group
    /// (ddp::reform_process_group); `why` is the step's error. Blocks; throws to end training.
    std::function<ddp::JoinedGroup(std::unique_ptr<ddp::ProcessGroup> broken,
                                   const ddp::CollectiveError& why)>
        reform;
    /// This process replaces a lost worker: its state comes from the peers, not from step 0 or a
    /// checkpoint.
    bool replacement = false;
    /// Testing: called as a re-formed group of generation `generation` begins its resync.
    std::function<void(std::int64_t generation)> before_resync;
};

/// train() over a group that survives lost peers. A step that fails with a CollectiveError
/// (PeerLost, CollectiveTimeout, ...) leaves the model at its last completed step; the group is
/// then re-formed through recovery.reform (`group` holds the new one) and the parameters, Adam
/// moments and position come from the furthest rank (ddp::resync_state); training continues at
/// the next step with the same sampler positions. A replacement starts with that resync. The
/// source of each resync prints "train: generation G re-formed at step s (rank R replaced);
/// state from rank X" to `log`. Blocks; throws what train() throws and reform's errors.
TrainResult train(ddp::JoinedGroup& group, const TrainOptions& options, std::ostream& log,
                  const TrainRecovery& recovery);

/// Writes `params` as text, one tensor per line: name, then the values ("%.9g"). Throws
/// std::runtime_error when the file cannot be written.
void write_params_text(const std::string& path, const std::vector<Tensor>& params);

}  // namespace ptrun::examples
