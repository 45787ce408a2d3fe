#include "ptrun/launcher/output/printable.hpp"

#include <cctype>

namespace ptrun::launcher {
namespace {

std::string escape(std::string_view text, bool keep_newlines) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte >= 0x20 && byte != 0x7f) || c == '\t' || (c == '\n' && keep_newlines)) {
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (byte == 0x1b) {
            out += "\\e";
        } else {
            out += "\\x";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xf];
        }
    }
    return out;
}

}  // namespace

std::string printable(std::string_view text) { return escape(text, false); }

std::string printable_lines(std::string_view text) { return escape(text, true); }

std::string shell_quoted(const std::string& word) {
    bool plain = !word.empty();
    for (char c : word) {
        const bool ok = std::isalnum(static_cast<unsigned char>(c)) ||
                        std::string_view("@%+=:,./-_").find(c) != std::string_view::npos;
        plain = plain && ok;
    }
    if (plain) return word;
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace ptrun::launcher
