#pragma once
/// The worker contract of ptrun's recovery in place (--restart-policy failed): the variables a
/// worker gets and the workers' store keys. The launcher writes generation and begun and
/// supersedes ready (GenerationBoard); the workers count themselves into joined and the last of
/// them marks ready (ptrun::ddp's Recovery). These are the names on the wire: torch's TCPStore
/// adds a leading "/" to every key, so a torch script's "ptrun/generation" is "/ptrun/generation"
/// here.

#include <cstdint>
#include <string>
#include <string_view>

namespace ptrun::env::generation_keys {

/// Every worker's: "failed" under --restart-policy failed (kFailedPolicy), absent otherwise.
inline constexpr std::string_view kPolicyEnv = "PTRUN_RESTART_POLICY";
inline constexpr std::string_view kFailedPolicy = "failed";
/// Every worker's under --restart-policy failed: the generation it starts in.
inline constexpr std::string_view kGenerationEnv = "PTRUN_GENERATION";

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

}  // namespace ptrun::env::generation_keys
