#pragma once
/// The workers' store keys of ptrun's recovery in place (--restart-policy failed). The launcher
/// writes generation and begun and supersedes ready; the workers count themselves into joined
/// and the last of them marks ready. These are the names on the wire: torch's TCPStore adds a
/// leading "/" to every key, so a torch script's "ptrun/generation" is "/ptrun/generation" here,
/// as the launcher writes it (launcher/agent/src/generation_board.hpp).

#include <cstdint>
#include <string>

namespace ptrun::ddp::detail::generation_keys {

/// The latest generation number, decimal.
inline const std::string kLatest = "/ptrun/generation";

/// Set when generation `g` (>= 1) begins; value: the replaced global ranks, "2" or "1,3".
inline std::string begun(std::int64_t g) { return "/ptrun/gen/" + std::to_string(g) + "/begun"; }

/// A counter: every worker adds 1 when it joins generation `g`.
inline std::string joined(std::int64_t g) { return "/ptrun/gen/" + std::to_string(g) + "/joined"; }

/// kJoined once every worker joined generation `g`; kSuperseded when g + 1 began first.
inline std::string ready(std::int64_t g) { return "/ptrun/gen/" + std::to_string(g) + "/ready"; }

inline constexpr const char* kJoined = "joined";
inline constexpr const char* kSuperseded = "superseded";

}  // namespace ptrun::ddp::detail::generation_keys
