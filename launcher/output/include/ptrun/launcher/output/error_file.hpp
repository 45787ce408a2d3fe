#pragma once
/// PyTorch's worker error file (TORCHELASTIC_ERROR_FILE, written by @record; spec §5.1).

#include <optional>
#include <string>

namespace ptrun::launcher {

/// What a worker said about its own failure.
struct WorkerErrorReport {
    std::string message;    ///< "ValueError: boom"
    std::string traceback;  ///< py_callstack, may be empty
    std::string timestamp;  ///< epoch seconds as text, may be empty
};

/// Parses the error file's text; nullopt when it is not one of torch's two shapes.
std::optional<WorkerErrorReport> parse_error_file(const std::string& text);

/// Reads and parses `path`; nullopt when the file is missing or unreadable.
std::optional<WorkerErrorReport> read_error_file(const std::string& path);

}  // namespace ptrun::launcher
