#pragma once
/// The coordinator's answer to one join (rdzv_keys.hpp admit): the node's placement in the round
/// it was admitted to, or why it was refused. Sealed by RdzvAuth in the store; read by the
/// joining node's RdzvSession.

#include <string>
#include <variant>

#include "ptrun/launcher/membership/node_placement.hpp"

namespace ptrun::launcher {

/// The coordinator refused the join; `message` is what the joining node reports.
struct AdmissionRefused {
    std::string message;
    bool operator==(const AdmissionRefused&) const = default;
};

using Admission = std::variant<NodePlacement, AdmissionRefused>;

/// The refusal a join gets once the job has ended (a spare waiting then exits 0).
inline constexpr const char* kJobEnded = "the job has ended";

/// JSON: {"placement": {...}} or {"refused": "<message>"}.
std::string encode(const Admission& admission);
/// Throws std::runtime_error naming what is missing or malformed (the text came over the network).
Admission decode_admission(const std::string& text);

}  // namespace ptrun::launcher
