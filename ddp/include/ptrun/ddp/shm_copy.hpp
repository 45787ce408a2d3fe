#pragma once
/// ShmCopy: how the cpu backend moves data between the ranks of a node (InitOptions::shm_copy).

#include <cstdint>
#include <string_view>

namespace ptrun::ddp {

/// Every rank of a node passes the same; all give the same bits.
enum class ShmCopy : std::uint8_t {
    /// Each message size times the candidates on its first calls, every local rank agreeing on
    /// the fastest, and checks again every few seconds of use.
    Auto,
    /// Through shared slots with non-temporal stores, for every size.
    Streamed,
    /// Through shared slots with ordinary stores, for every size.
    Plain,
    /// Straight between the ranks' own buffers (process_vm_readv/writev), for every size; needs
    /// ptrace access between the ranks.
    SingleCopy,
};

/// "auto", "streamed", "plain", "single-copy".
std::string_view shm_copy_name(ShmCopy copy);

/// The ShmCopy `text` names (shm_copy_name's spelling). Throws CollectiveError
/// "init_process_group: unknown shm_copy 'TEXT' (expected auto, streamed, plain or single-copy)"
/// for anything else.
ShmCopy parse_shm_copy(std::string_view text);

}  // namespace ptrun::ddp
