#pragma once
/// Memory sizes as a person writes them: "24G", "512MiB", "100M", "1.5G", "1073741824".

#include <cstdint>
#include <optional>
#include <string_view>

namespace ptrun::launcher {

/// Bytes of `text`: a number (decimals allowed) and an optional binary unit, K/M/G/T with or
/// without "iB" or "B" (1K = 1024, as SLURM's --mem and docker's --memory read it), upper or
/// lower case; nullopt for anything else, 0, or more than 2^62 bytes.
std::optional<std::uint64_t> parse_memory_size(std::string_view text);

}  // namespace ptrun::launcher
