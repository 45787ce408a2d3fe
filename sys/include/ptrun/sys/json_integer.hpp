#pragma once
/// Strict integers out of JSON that came over the network: nlohmann's get<T>() converts 1e30,
/// 1.5 or -1 silently (or with undefined behaviour) into a T.

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace ptrun::sys {

/// `v` as a T when it is a JSON integer that T holds; else throws std::out_of_range.
template <typename T>
T json_integer(const nlohmann::json& v) {
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u <= static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
            return static_cast<T>(u);
    } else if (v.is_number_integer()) {
        const auto i = v.get<std::int64_t>();
        if (std::numeric_limits<T>::is_signed &&
            i >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
            i <= static_cast<std::int64_t>(std::numeric_limits<T>::max()))
            return static_cast<T>(i);
        if (!std::numeric_limits<T>::is_signed && i >= 0) return static_cast<T>(i);
    }
    throw std::out_of_range("not an integer in range");
}

}  // namespace ptrun::sys
