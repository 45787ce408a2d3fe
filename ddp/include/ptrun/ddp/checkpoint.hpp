#pragma once
/// Training checkpoints: a small versioned binary file of named float buffers, written atomically.
///
/// Layout (little-endian): magic "PTRNCKPT", u32 version, u32 buffer count, u64 step, u64 epoch,
/// then per buffer u32 name length, name bytes, u64 element count, float32 elements; then a u64
/// FNV-1a checksum of everything before it. A torn, truncated or altered file fails the checksum or
/// the length checks and is reported, never half-loaded.

#include <utility>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ptrun::ddp {

/// A checkpoint file is unreadable, corrupt, of an unknown version, or could not be written.
/// The message names the file and what was wrong.
struct CheckpointError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// What a checkpoint holds: a position in training and named buffers (parameters, optimizer state).
struct Checkpoint {
    std::uint64_t step = 0;
    std::uint64_t epoch = 0;
    std::vector<std::pair<std::string, std::vector<float>>> buffers;

    /// The buffer called `name`; throws CheckpointError when there is none.
    const std::vector<float>& buffer(const std::string& name) const;
};

inline constexpr std::uint32_t kCheckpointVersion = 1;

/// Writes `ckpt` to `file` atomically: a temporary file in the same directory, fsync, rename over
/// `file`, fsync of the directory. Readers see the old file or the new one, never a mix. Blocks on
/// disk I/O; throws CheckpointError.
void write_checkpoint(const std::filesystem::path& file, const Checkpoint& ckpt);

/// Reads and verifies one checkpoint file; throws CheckpointError (names the file and the defect).
Checkpoint read_checkpoint(const std::filesystem::path& file);

/// A directory of numbered checkpoints (ckpt-<step>.bin) where rank 0 writes and anyone reads.
class CheckpointDir {
  public:
    /// `keep`: how many of the newest checkpoints survive a save (at least 1).
    CheckpointDir(std::filesystem::path dir, int rank, int keep = 2);

    /// On rank 0: creates the directory if needed, writes atomically, prunes old files; returns
    /// the path written. Other ranks write nothing and return nullopt. Throws CheckpointError.
    std::optional<std::filesystem::path> save(const Checkpoint& ckpt) const;

    /// The checkpoint with the highest step, or nullopt when the directory holds none. A corrupt
    /// latest file throws CheckpointError (it is never silently skipped).
    std::optional<Checkpoint> load_latest() const;

    /// The checkpoint files present, oldest step first.
    std::vector<std::filesystem::path> list() const;

    const std::filesystem::path& path() const { return dir_; }

  private:
    std::filesystem::path dir_;
    int rank_;
    int keep_;
};

}  // namespace ptrun::ddp
