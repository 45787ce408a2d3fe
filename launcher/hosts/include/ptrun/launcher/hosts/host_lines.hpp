#pragma once
/// The lines of each host's remote shell as the launching ptrun shows them (pure): split into
/// lines, each prefixed with its host unless the host's ptrun prefixed it already ("[node2:3] "
/// for a worker's line, "[ptrun node2:PID] " for its own), and the start line that a host's ptrun
/// writes first taken out.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::launcher {

/// The first line a ptrun started with --from-launcher writes on stdout: from then on the
/// launching ptrun knows ptrun runs there (before it, the remote shell's own failures are told
/// apart from the job's). Not shown.
inline constexpr std::string_view kAgentStartedLine = "ptrun --from-launcher: started";

/// `line` (without its newline) as shown: "[HOST] line", or `line` when it already starts with
/// "[HOST:" or "[ptrun HOST:".
std::string host_line(std::string_view host, std::string_view line);

/// Cuts a byte stream into lines: '\n' ends one, and a line reaching `max_line` bytes is passed
/// on in pieces, so that memory stays bounded.
class LineSplitter {
  public:
    explicit LineSplitter(std::size_t max_line) : max_line_(max_line) {}
    /// The lines `data` completes, without their '\n'.
    std::vector<std::string> feed(std::string_view data);
    /// What is left after the last '\n' (empty when nothing), and forgets it.
    std::string rest();

  private:
    std::size_t max_line_;
    std::string partial_;
};

}  // namespace ptrun::launcher
