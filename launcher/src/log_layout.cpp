#include "ptrun/launcher/log_layout.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace ptrun::launcher {

LogLayout::LogLayout(std::string log_dir, std::string run_id)
    : requested_(std::move(log_dir)), run_id_(std::move(run_id)) {}

LogLayout::~LogLayout() {
    if (temporary_ && !keep_ && !root_.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(root_, ec);
    }
}

std::string LogLayout::worker_dir(int attempt, int local_rank) {
    if (root_.empty()) {
        if (requested_.empty()) {
            const char* tmp = std::getenv("TMPDIR");
            std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ptrun-XXXXXX";
            if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a directory like " + pattern);
            root_ = pattern;
            temporary_ = true;
        } else {
            root_ = requested_;
        }
    }
    std::string dir = run_dir() + "/attempt_" + std::to_string(attempt) + "/" + std::to_string(local_rank);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error("--log-dir: cannot create '" + dir + "': " + ec.message());
    return dir;
}

}  // namespace ptrun::launcher
