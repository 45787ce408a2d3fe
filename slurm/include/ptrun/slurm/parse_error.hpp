#pragma once
/// The one error type of ptrun::slurm: a SLURM value (a hostlist, a tasks-per-node string, a
/// SLURM_* variable) that is malformed, missing, or contradicts another one.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ptrun::slurm {

/// what() is "<subject>: <reason>", plus " at offset <pos>" when the fault has a place in the text.
/// The subject names the input: "hostlist 'node[2-1]'" or "SLURM_STEP_NODELIST='node[2-1]'".
struct ParseError : std::runtime_error {
    /// No position: the value is wrong as a whole (a cap, a contradiction, a missing variable).
    static constexpr std::size_t kNoPos = static_cast<std::size_t>(-1);

    /// Builds the message from its parts; `pos` is a byte offset into the text named by `subject`.
    ParseError(std::string_view subject, std::string_view reason, std::size_t pos = kNoPos);

    /// Byte offset of the fault in the parsed text, or kNoPos.
    std::size_t pos;
    /// The reason alone, without subject or position (e.g. "invalid range '2-1' ...").
    std::string reason;
};

}  // namespace ptrun::slurm
