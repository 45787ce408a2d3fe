#include "ptrun/rendezvous/errors.hpp"

#include <cstdio>

namespace ptrun::rdzv {
namespace {

constexpr std::size_t kMaxKeysShown = 8;
constexpr std::size_t kMaxKeyChars = 128;

std::string quote(std::string_view key) {
    std::string out = "'";
    for (std::size_t i = 0; i < key.size() && i < kMaxKeyChars; ++i) {
        const auto c = static_cast<unsigned char>(key[i]);
        if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
            out.push_back(static_cast<char>(c));
        } else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            out += hex;
        }
    }
    if (key.size() > kMaxKeyChars) out += "...";
    return out + "'";
}

}  // namespace

std::string describe_keys(const std::vector<std::string>& keys) {
    std::string out;
    for (std::size_t i = 0; i < keys.size() && i < kMaxKeysShown; ++i) {
        if (i > 0) out += ", ";
        out += quote(keys[i]);
    }
    if (keys.size() > kMaxKeysShown) {
        out += " (+" + std::to_string(keys.size() - kMaxKeysShown) + " more)";
    }
    return out;
}

StoreTimeout::StoreTimeout(std::string_view operation, std::vector<std::string> keys,
                           std::chrono::milliseconds waited)
    : StoreError(std::string(operation) + " timed out after " + std::to_string(waited.count()) +
                 " ms waiting for " + std::to_string(keys.size()) +
                 " key(s): " + describe_keys(keys)),
      keys_(std::move(keys)),
      waited_(waited) {}

}  // namespace ptrun::rdzv
