#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ptrun/launcher/cli/launcher_env_defaults.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/schedulers/host_file.hpp"

namespace ptrun::launcher {

std::string read_host_file(std::string_view var, const std::string& path) {
    const std::string subject = std::string(var) + "='" + path + "'";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw UsageError(subject + ": cannot open the host file: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw UsageError(subject + ": not a regular file");
    }
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            throw UsageError(subject + ": cannot read the host file: " + std::strerror(err));
        }
        if (n == 0) break;
        if (text.size() + static_cast<std::size_t>(n) > schedulers::kMaxHostFileBytes) {
            ::close(fd);
            throw UsageError(subject + ": the host file is larger than " +
                             std::to_string(schedulers::kMaxHostFileBytes >> 20) + " MiB");
        }
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return text;
}

}  // namespace ptrun::launcher
