#pragma once
/// A parser for one flat JSON object ({"key": scalar, ...}) as Python's json.dumps writes it,
/// Infinity, -Infinity and NaN included. Nested objects and arrays are refused: the messages
/// torch's file timer and similar small protocols send are flat, and refusing depth keeps a
/// hostile line from costing more than one pass over its bytes.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

namespace ptrun::watchdog::detail {

/// A JSON number: its value as a double, and as an integer when it is written as one and fits.
struct JsonNumber {
    double value = 0;
    bool is_integer = false;
    std::int64_t integer = 0;
};

struct JsonNull {};
using JsonScalar = std::variant<JsonNull, bool, JsonNumber, std::string>;
using FlatObject = std::map<std::string, JsonScalar, std::less<>>;

/// Malformed input; the message says what was expected at which byte offset.
struct JsonError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Parses `text` (surrounding whitespace allowed) as one flat object; a repeated key keeps its
/// last value, as Python's json does. Strings are decoded to UTF-8 (\uXXXX escapes and surrogate
/// pairs included; a lone surrogate becomes U+FFFD). Throws JsonError.
FlatObject parse_flat_object(std::string_view text);

}  // namespace ptrun::watchdog::detail
