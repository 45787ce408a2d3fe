#include "ptrun/launcher/output/remove_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace ptrun::launcher {
namespace {

constexpr int kMaxDepth = 64;

/// Removes everything in the directory open at `dir` (then closes it).
void empty_directory(int dir, int depth) noexcept {
    alignas(dirent64) char buffer[4096];
    for (;;) {
        const ssize_t got = ::getdents64(dir, buffer, sizeof buffer);
        if (got <= 0) break;
        for (ssize_t at = 0; at < got;) {
            const auto* entry = reinterpret_cast<const dirent64*>(buffer + at);
            at += entry->d_reclen;
            const char* name = entry->d_name;
            if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
            if (entry->d_type != DT_DIR) {
                if (::unlinkat(dir, name, 0) == 0 || entry->d_type != DT_UNKNOWN) continue;
            }
            // An empty directory (a rank's that its worker never wrote in) goes at once; only
            // one with something in it is opened and listed.
            if (::unlinkat(dir, name, AT_REMOVEDIR) == 0) continue;
            if (errno != ENOTEMPTY && errno != EEXIST) continue;  // POSIX allows either
            if (depth >= kMaxDepth) continue;
            const int sub = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) continue;
            empty_directory(sub, depth + 1);
            ::unlinkat(dir, name, AT_REMOVEDIR);
        }
    }
    ::close(dir);
}

}  // namespace

void remove_tree(const std::string& path) noexcept {
    const int dir = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) {
        ::unlink(path.c_str());  // a file or a link, if anything
        return;
    }
    empty_directory(dir, 0);
    ::rmdir(path.c_str());
}

}  // namespace ptrun::launcher
