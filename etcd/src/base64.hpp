#pragma once
/// Base64 (RFC 4648, with padding) as etcd's gateway writes keys and values.

#include <optional>
#include <string>
#include <string_view>

namespace ptrun::etcd::detail {

/// `bytes` as padded base64.
std::string base64_encode(std::string_view bytes);
/// The bytes of padded base64 `text`; nullopt for a bad character, length or padding. Unused
/// bits in the last group are ignored, as Go's decoder (etcd's encoder) ignores them.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace ptrun::etcd::detail
