#pragma once
/// Private: the checkpoint byte format (see checkpoint.hpp), separate from file I/O for tests.

#include <cstdint>
#include <string>
#include <string_view>

#include "ptrun/ddp/checkpoint.hpp"

namespace ptrun::ddp::detail {

/// FNV-1a, 64-bit: the checkpoint trailer's checksum.
std::uint64_t fnv1a64(std::string_view data);

/// The file's bytes for `ckpt`; throws CheckpointError on an over-long buffer name.
std::string encode_checkpoint(const Checkpoint& ckpt);

/// Parses and verifies; `what` (the file name) prefixes every CheckpointError message.
Checkpoint decode_checkpoint(std::string_view data, const std::string& what);

}  // namespace ptrun::ddp::detail
