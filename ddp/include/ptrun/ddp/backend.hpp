#pragma once
/// Backend: which collectives a process group runs on (InitOptions::backend).

#include <cstdint>
#include <string_view>

namespace ptrun::ddp {

/// nccl collectives take CUDA device buffers; code that passes host memory asks for Cpu.
enum class Backend : std::uint8_t {
    /// Nccl when libnccl.so.2 and the CUDA runtime load and a GPU is visible, else Cpu.
    Auto,
    /// Shared memory within a node, a TCP ring between nodes; host buffers.
    Cpu,
    /// NCCL over a runtime-loaded libnccl.so.2; device buffers.
    Nccl,
};

/// "auto", "cpu", "nccl" (what ProcessGroup::backend_name() reports for Cpu and Nccl).
std::string_view backend_name(Backend backend);

/// The Backend `text` names (backend_name's spelling). Throws CollectiveError "init_process_group:
/// unknown backend 'TEXT' (expected cpu, nccl or auto)" for anything else.
Backend parse_backend(std::string_view text);

}  // namespace ptrun::ddp
