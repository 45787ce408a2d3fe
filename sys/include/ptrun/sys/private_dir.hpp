#pragma once
/// ptrun's temporary directories live on world-writable /dev/shm and /tmp, where a training
/// script's clean-up step (`rm -rf /dev/shm/ptrun-*`) can remove them under a running job: what
/// ptrun owns there is made again before it is used, never trusted to still be there.

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace ptrun::sys {

/// Makes `path` (mode 0700) when it is missing; true when it is then a directory, not a symbolic
/// link, owned by this user and closed to others; false with errno set otherwise (EPERM for one
/// that someone else made in its place). The parent must exist.
inline bool ensure_private_dir(const std::string& path) {
    if (::mkdir(path.c_str(), 0700) == 0) return true;
    if (errno != EEXIST) return false;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return false;
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
        errno = EPERM;
        return false;
    }
    return true;
}

}  // namespace ptrun::sys
