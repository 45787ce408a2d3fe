#include "ptrun/launcher/cli/node_range.hpp"

#include <limits>
#include <string>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {
namespace {

int positive(std::string_view part, std::string_view whole) {
    auto v = env::parse_int(part);
    if (!v || *v < 1 || *v > std::numeric_limits<int>::max()) {
        throw UsageError("--nnodes '" + std::string(whole) +
                         "': expected N or MIN:MAX with 1 <= MIN <= MAX");
    }
    return static_cast<int>(*v);
}

}  // namespace

NodeRange parse_node_range(std::string_view text) {
    auto colon = text.find(':');
    if (colon == std::string_view::npos) {
        int n = positive(text, text);
        return {n, n};
    }
    NodeRange r{positive(text.substr(0, colon), text), positive(text.substr(colon + 1), text)};
    if (r.min > r.max) {
        throw UsageError("--nnodes '" + std::string(text) + "': MIN " + std::to_string(r.min) +
                         " is greater than MAX " + std::to_string(r.max));
    }
    return r;
}

}  // namespace ptrun::launcher
