#pragma once
/// Whether a process has a handler for a signal: a signal whose default action ends a process
/// (a real-time one asking for a stack dump, say) is sent only to a process that catches it.

#include <sys/types.h>

#include <exception>
#include <fstream>
#include <string>

namespace ptrun::sys {

/// True when process `pid` catches signal `signo` (its SigCgt mask in /proc/PID/status); false
/// when it does not, or has exited, or the file cannot be read.
inline bool signal_caught(pid_t pid, int signo) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("SigCgt:", 0) != 0) continue;
        try {
            const auto mask = std::stoull(line.substr(7), nullptr, 16);
            return signo >= 1 && signo <= 64 && ((mask >> (signo - 1)) & 1U) != 0;
        } catch (const std::exception&) {
            return false;
        }
    }
    return false;
}

}  // namespace ptrun::sys
