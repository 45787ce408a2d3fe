#include <string_view>

#include "ptrun/rendezvous/store.hpp"

namespace ptrun::rdzv {
namespace {

/// What compare_set is told to expect: NUL-framed, a value no caller stores.
constexpr std::string_view kNeverStored{"\0ptrun-peek: absent\0", 20};

}  // namespace

std::vector<std::optional<std::string>> Store::peek(const std::vector<std::string>& keys) {
    std::vector<std::optional<std::string>> out;
    out.reserve(keys.size());
    for (const auto& key : keys) {
        auto now = compare_set(key, kNeverStored, kNeverStored);
        if (now == kNeverStored) {
            out.emplace_back();
        } else {
            out.emplace_back(std::move(now));
        }
    }
    return out;
}

}  // namespace ptrun::rdzv
