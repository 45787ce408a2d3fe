#pragma once
/// The text of an ADD counter, read as torch's store reads it (strtoll-like).

#include <cstdint>
#include <optional>
#include <string_view>

namespace ptrun::rdzv::detail {

/// Optional leading whitespace and '+' or '-', at least one digit; the rest is ignored. nullopt
/// when no integer starts the text or it overflows.
std::optional<std::int64_t> parse_counter(std::string_view text);

}  // namespace ptrun::rdzv::detail
