#pragma once
/// A bad command line or environment value: one line naming the input and what was expected.

#include <stdexcept>

namespace ptrun::launcher {

/// Thrown for user input ptrun cannot accept; `main` prints it and exits 2, starting nothing.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// A flag ptrun parses but whose feature is not built yet; also exit 2, never a silent ignore.
struct NotSupportedError : UsageError {
    using UsageError::UsageError;
};

}  // namespace ptrun::launcher
