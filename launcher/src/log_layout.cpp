#include "ptrun/launcher/log_layout.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace ptrun::launcher {
namespace {

/// $TMPDIR when the user set one; else /dev/shm for error files when usable; else /tmp.
std::string temp_base(bool prefer_tmpfs) {
    const char* tmp = std::getenv("TMPDIR");
    if (tmp && *tmp) return tmp;
    if (prefer_tmpfs && ::access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
    return "/tmp";
}

std::string make_temp_dir(bool prefer_tmpfs) {
    std::string pattern = temp_base(prefer_tmpfs) + "/ptrun-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
        throw std::runtime_error("cannot create a directory like " + pattern + ": " + std::strerror(errno));
    }
    return pattern;
}

/// mkdir -p of `dir` below an existing `root`, one mkdir per missing level.
void make_dirs(const std::string& root, const std::string& rest) {
    std::string path = root;
    std::size_t start = 0;
    while (start < rest.size()) {
        auto slash = rest.find('/', start);
        auto end = slash == std::string::npos ? rest.size() : slash;
        path += "/" + rest.substr(start, end - start);
        if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
            throw std::runtime_error("cannot create '" + path + "': " + std::strerror(errno));
        }
        start = end + 1;
    }
}

}  // namespace

LogLayout::LogLayout(std::string log_dir, std::string run_id)
    : requested_(std::move(log_dir)), run_id_(std::move(run_id)) {}

LogLayout::~LogLayout() {
    if (error_root_temporary_) {
        std::error_code ec;
        std::filesystem::remove_all(error_root_, ec);
    }
}

std::string LogLayout::make_worker_dir(std::string& root, const char* what, int attempt, int local_rank) {
    if (root.empty()) {
        if (requested_.empty()) {
            bool for_errors = std::strcmp(what, "error") == 0;
            root = make_temp_dir(for_errors);
            error_root_temporary_ = error_root_temporary_ || for_errors;
        } else {
            std::error_code ec;
            std::filesystem::create_directories(requested_, ec);
            if (ec) throw std::runtime_error("--log-dir '" + requested_ + "': cannot create it: " + ec.message());
            root = requested_;
        }
    }
    std::string rest = run_id_ + "/attempt_" + std::to_string(attempt) + "/" + std::to_string(local_rank);
    make_dirs(root, rest);
    return root + "/" + rest;
}

std::string LogLayout::error_dir(int attempt, int local_rank) {
    return make_worker_dir(requested_.empty() ? error_root_ : log_root_, "error", attempt, local_rank);
}

std::string LogLayout::log_dir(int attempt, int local_rank) {
    return make_worker_dir(log_root_, "log", attempt, local_rank);
}

}  // namespace ptrun::launcher
