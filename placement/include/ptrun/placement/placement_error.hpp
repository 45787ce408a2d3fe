#pragma once
/// The one error of ptrun::placement: a topology that cannot be read or a binding that cannot
/// be made. The message names the file, value or worker and what was expected.

#include <stdexcept>

namespace ptrun::placement {

struct PlacementError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace ptrun::placement
