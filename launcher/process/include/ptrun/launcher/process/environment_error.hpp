#pragma once
/// Errors the machine or the user's setup causes (no space, no inodes, a quota, too few open
/// files, a directory that cannot be written): the user's to fix, never called "internal error".

#include <stdexcept>
#include <string>

namespace ptrun::launcher {

/// The machine refused something the job needs; `main` prints "ptrun: error: <message>" and
/// exits 1. The message names the object and says what to do.
struct EnvironmentError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// "<what>: <what errno means here and what to do>", e.g. for ENOSPC "no space or inodes left
/// on its file system", for EMFILE "too many open files: raise `ulimit -n` (now N, this job needs
/// about M)" (M = `fds_needed`, left out when 0).
std::string errno_message(const std::string& what, int err, int fds_needed = 0);

/// How many descriptors this process has open now (the size of /proc/self/fd, else its entries),
/// -1 when unknown.
int open_fd_count();

/// True for the errno values of a full file system (ENOSPC, EDQUOT).
bool is_out_of_space(int err);

/// Call inside a catch block: a system error (std:: or boost::system) whose errno the machine
/// caused (EMFILE, ENFILE, ENOSPC, EDQUOT, ENOMEM) is rethrown as an EnvironmentError saying what
/// to do (for EMFILE with `needed` descriptors); anything else is rethrown as it was.
[[noreturn]] void rethrow_as_environment_error(int fds_needed);

}  // namespace ptrun::launcher
