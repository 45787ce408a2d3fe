#pragma once
/// Durations as a person reads them, in the unit the options take (seconds), never raw ms.

#include <chrono>
#include <string>

namespace ptrun::launcher {

/// "10 s", "0.5 s", "2.25 s": at most two decimals, none when whole.
std::string seconds_text(std::chrono::milliseconds d);

/// "45 s", "5 min", "1 h 5 min": for how long something has been going on.
std::string elapsed_text(std::chrono::seconds d);

}  // namespace ptrun::launcher
