#include "ptrun/launcher/process/environment_error.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <boost/system/system_error.hpp>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

namespace ptrun::launcher {

namespace {

/// The soft limit `resource` as `ulimit` shows it: a number, or "unlimited".
std::string limit_text(int resource) {
    rlimit lim{};
    if (::getrlimit(resource, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return "unlimited";
    return std::to_string(lim.rlim_cur);
}

/// " (`ulimit -v` is N KiB)" when an address-space limit is set, else "".
std::string memory_limit_text() {
    rlimit lim{};
    if (::getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return "";
    return " (`ulimit -v` is " + std::to_string(lim.rlim_cur / 1024) + " KiB: raise it)";
}

}  // namespace

bool is_out_of_space(int err) { return err == ENOSPC || err == EDQUOT; }

int open_fd_count() {
    // Linux 6.2 and later give the count as the directory's size: one stat, no listing (the
    // listing fills /proc's cache with an entry per descriptor, a measurable part of a launch).
    struct stat st {};
    if (::stat("/proc/self/fd", &st) == 0 && st.st_size > 0) return static_cast<int>(st.st_size);
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return -1;
    int count = 0;
    while (const dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] != '.') ++count;
    }
    ::closedir(dir);
    return count - 1;  // the directory's own descriptor
}

std::string errno_message(const std::string& what, int err, int fds_needed) {
    switch (err) {
        case ENOSPC:
            return what +
                   ": no space or no inodes left on its file system (free some, or use "
                   "another directory)";
        case EDQUOT:
            return what + ": disk quota exceeded (free some space, or use another directory)";
        case EMFILE: {
            rlimit lim{};
            ::getrlimit(RLIMIT_NOFILE, &lim);
            std::string text = what + ": too many open files: raise `ulimit -n` (now " +
                               std::to_string(lim.rlim_cur);
            if (fds_needed > 0) text += ", this job needs about " + std::to_string(fds_needed);
            return text + ")";
        }
        case ENOMEM:
            return what + ": out of memory" + memory_limit_text();
        case EAGAIN:
            return what +
                   ": the system refused another process or thread: too many for this user (raise "
                   "`ulimit -u`, now " +
                   limit_text(RLIMIT_NPROC) + ", or the cgroup's pids.max) or too little memory" +
                   memory_limit_text();
        case ENFILE:
            return what + ": the system's open-file table is full (sysctl fs.file-max)";
        case EACCES:
        case EPERM:
            return what + ": permission denied";
        case EROFS:
            return what + ": read-only file system";
        default:
            return what + ": " + std::strerror(err);
    }
}

void rethrow_as_environment_error(int fds_needed) {
    auto environmental = [](int err) {
        return err == EMFILE || err == ENFILE || err == ENOMEM || err == EAGAIN ||
               is_out_of_space(err);
    };
    try {
        throw;
    } catch (const std::bad_alloc&) {
        throw EnvironmentError(errno_message("ptrun", ENOMEM));
    } catch (const boost::system::system_error& e) {
        const auto& code = e.code();
        if (code.category() == boost::system::system_category() && environmental(code.value())) {
            throw EnvironmentError(
                errno_message(std::string("ptrun (") + e.what() + ")", code.value(), fds_needed));
        }
        throw;
    } catch (const std::system_error& e) {
        const auto& code = e.code();
        if ((code.category() == std::system_category() ||
             code.category() == std::generic_category()) &&
            environmental(code.value())) {
            throw EnvironmentError(
                errno_message(std::string("ptrun (") + e.what() + ")", code.value(), fds_needed));
        }
        throw;
    }
}

}  // namespace ptrun::launcher
