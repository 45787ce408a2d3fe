#include "ptrun/launcher/output/log_layout.hpp"

#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/output/remove_tree.hpp"
#include "ptrun/launcher/output/run_log.hpp"
#include "ptrun/launcher/output/utc_fields.hpp"
#include "ptrun/launcher/process/environment_error.hpp"
#include "ptrun/sys/private_dir.hpp"

namespace ptrun::launcher {
namespace {

constexpr const char* kTmpfs = "/dev/shm";

/// `text` with what cannot be part of a directory name ('/', NUL, a leading '.') replaced by '_'.
std::string name_part(std::string text) {
    for (auto& c : text) {
        if (c == '/' || c == '\0') c = '_';
    }
    if (!text.empty() && text[0] == '.') text[0] = '_';
    return text;
}

/// <run-id>_<host>_<UTC time>_XXXXXX, for mkdtemp.
std::string run_dir_pattern(const std::string& run_id, const std::string& host) {
    const auto now = utc_fields(std::chrono::system_clock::now());  // gmtime_r would read the zone
    std::string stamp;  // YYYYMMDDTHHMMSSZ; digits by hand, as printf's code is not loaded yet
    auto digits = [&stamp](long value, std::size_t width) {
        std::string d = std::to_string(value);
        stamp += std::string(d.size() < width ? width - d.size() : 0, '0') + d;
    };
    digits(now.year, 4);
    digits(now.month, 2);
    digits(now.day, 2);
    stamp += 'T';
    digits(now.hour, 2);
    digits(now.minute, 2);
    digits(now.second, 2);
    return name_part(run_id) + "_" + name_part(host.substr(0, host.find('.'))) + "_" + stamp +
           "Z_XXXXXX";
}

/// mkdtemp(`pattern`): the directory made, or "" with errno set.
std::string make_temp(std::string pattern) {
    return ::mkdtemp(pattern.data()) ? pattern : std::string();
}

constexpr std::string_view kNameChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A run directory: `pattern` with its trailing XXXXXX random, made by mkdir(0755), so that its
/// mode is what the umask leaves of 0755 without reading the umask (umask() sets it for every
/// thread). The directory made, or "" with errno set.
std::string make_run_temp(std::string pattern) {
    const std::size_t x = pattern.size() - 6;
    for (int tries = 0; tries < 100; ++tries) {
        unsigned char random[6];
        if (::getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) return {};
        for (std::size_t i = 0; i < sizeof random; ++i)
            pattern[x + i] = kNameChars[random[i] % kNameChars.size()];
        if (::mkdir(pattern.c_str(), 0755) == 0) return pattern;
        if (errno != EEXIST) return {};
    }
    return {};  // errno is EEXIST
}

/// True when the tmpfs at `path` has room for an attempt's error files (a limit of 0 is none).
bool tmpfs_has_room(const char* path, int nproc) {
    struct statvfs fs {};
    if (::statvfs(path, &fs) != 0) return false;
    const auto need_inodes = static_cast<fsfilcnt_t>(16 + 2 * nproc);
    const auto need_bytes =
        static_cast<unsigned long long>(1 << 20) + 16384ULL * static_cast<unsigned>(nproc);
    const bool inodes_ok = fs.f_files == 0 || fs.f_favail >= need_inodes;
    const bool space_ok = fs.f_blocks == 0 ||
                          static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize >= need_bytes;
    return inodes_ok && space_ok;
}

/// mkdir -p of `rest` below an existing `base`; 0, or the errno with the path that failed.
int make_dirs(const std::string& base, const std::string& rest, std::string& failed,
              std::vector<std::string>& made) {
    std::string path = base;
    std::size_t start = 0;
    while (start < rest.size()) {
        auto slash = rest.find('/', start);
        auto end = slash == std::string::npos ? rest.size() : slash;
        path += "/" + rest.substr(start, end - start);
        if (::mkdir(path.c_str(), 0755) == 0) {
            made.push_back(path);
        } else if (errno != EEXIST) {
            failed = path;
            return errno;
        }
        start = end + 1;
    }
    return 0;
}

}  // namespace

LogLayout::LogLayout(std::string log_dir, std::string run_id, std::string host, std::string tmpdir,
                     int nproc)
    : requested_(std::move(log_dir)),
      run_id_(std::move(run_id)),
      host_(std::move(host)),
      tmpdir_(std::move(tmpdir)),
      nproc_(nproc) {}

LogLayout::~LogLayout() {
    for (const auto& root : temp_roots_) {
        if (!remove_made(root)) remove_tree(root);
    }
}

bool LogLayout::remove_made(const std::string& root) const {
    const std::string prefix = root + "/";
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
        if (it->compare(0, prefix.size(), prefix) != 0) continue;
        if (::rmdir(it->c_str()) != 0 && errno != ENOENT) return false;  // a worker's file in it
    }
    return ::rmdir(root.c_str()) == 0;
}

std::string LogLayout::prepare() {
    if (requested_.empty() || !logs_.run.empty()) return "";
    std::error_code ec;
    auto absolute =
        std::filesystem::absolute(requested_, ec);  // reports name it wherever they are read
    if (!ec) requested_ = absolute.lexically_normal().string();
    if (requested_.size() > 1 && requested_.back() == '/') requested_.pop_back();
    std::filesystem::create_directories(requested_, ec);
    if (ec) throw UsageError("--log-dir '" + requested_ + "': cannot create it: " + ec.message());
    logs_.path = requested_;
    std::string name = run_dir_pattern(run_id_, host_);
    logs_.run = make_run_temp(requested_ + "/" + name);
    if (logs_.run.empty()) {
        int err = errno;
        if (is_out_of_space(err))
            throw EnvironmentError(errno_message("--log-dir '" + requested_ + "'", err));
        throw UsageError("--log-dir '" + requested_ +
                         "': cannot write there: " + std::strerror(err));
    }
    errors_ = logs_;
    // <log-dir>/latest -> this run, replaced atomically (a symlink renamed over the old one).
    name = logs_.run.substr(requested_.size() + 1);
    const std::string link = requested_ + "/latest";
    const std::string tmp = requested_ + "/.latest." + name.substr(name.size() - 6);
    if (::symlink(name.c_str(), tmp.c_str()) != 0 || ::rename(tmp.c_str(), link.c_str()) != 0) {
        std::string why = std::strerror(errno);
        ::unlink(tmp.c_str());
        return "could not point " + link + " at this run (" + why + "); its files are in " +
               logs_.run;
    }
    return "";
}

void LogLayout::begin_generation(int local_rank, int generation) {
    for (auto& entry : generations_) {
        if (entry.first == local_rank) {
            entry.second = generation;
            return;
        }
    }
    generations_.emplace_back(local_rank, generation);
}

void LogLayout::begin_attempt(int restart_count, int round) {
    generations_.clear();
    auto used = [this](const std::string& name) {
        if (std::find(attempts_used_.begin(), attempts_used_.end(), name) != attempts_used_.end()) {
            return true;
        }
        attempts_used_.push_back(name);
        return false;
    };
    attempt_ = "attempt_" + std::to_string(restart_count);
    if (!used(attempt_)) return;
    attempt_ += "_round_" + std::to_string(round);
    for (int k = 2; used(attempt_); ++k) {
        attempt_ = "attempt_" + std::to_string(restart_count) + "_round_" + std::to_string(round) +
                   "." + std::to_string(k);
    }
}

void LogLayout::make_run_dir(Root& root) {
    // A temporary root is private (0700) and removed at exit: its run directory needs no opening
    // up.
    auto pattern = root.path + "/" + run_dir_pattern(run_id_, host_);
    root.run = root.temporary ? make_temp(pattern) : make_run_temp(pattern);
    if (root.run.empty())
        throw EnvironmentError(errno_message("cannot create a directory in " + root.path, errno));
    made_.push_back(root.run);
}

void LogLayout::open_error_root() {
    const bool try_tmpfs = tmpdir_.empty() && tmpfs_has_room(kTmpfs, nproc_);
    std::string base = !tmpdir_.empty() ? tmpdir_ : "/tmp";
    if (try_tmpfs) {
        errors_.path = make_temp(std::string(kTmpfs) + "/ptrun-XXXXXX");
        if (!errors_.path.empty())
            errors_.run = make_temp(errors_.path + "/" + run_dir_pattern(run_id_, host_));
        if (!errors_.path.empty()) temp_roots_.push_back(errors_.path);
        if (!errors_.run.empty()) made_.push_back(errors_.run);
        errors_.tmpfs = !errors_.run.empty();
        errors_.temporary = true;
        if (errors_.tmpfs) return;
    }
    errors_.path = make_temp(base + "/ptrun-XXXXXX");
    if (errors_.path.empty()) {
        throw EnvironmentError(
            errno_message("cannot create a temporary directory in " + base, errno));
    }
    temp_roots_.push_back(errors_.path);
    errors_.temporary = true;
    errors_.tmpfs = false;
    make_run_dir(errors_);
}

void LogLayout::open_temp_log_root() {
    std::string base = !tmpdir_.empty() ? tmpdir_ : "/tmp";
    logs_.path = make_temp(base + "/ptrun-XXXXXX");
    if (logs_.path.empty()) {
        throw EnvironmentError(
            errno_message("cannot create a directory for log files in " + base, errno));
    }
    make_run_dir(logs_);
}

std::string LogLayout::worker_dir(Root& root, int local_rank) {
    std::string failed;
    int err = 0;
    if (root.attempt != attempt_) {  // the attempt's directory once, then one mkdir per worker
        err = make_dirs(root.run, attempt_, failed, made_);
        if (err == ENOENT && requested_.empty()) {
            // A worker's clean-up removed ptrun's temporary directory: made again.
            if (!sys::ensure_private_dir(root.path) || !sys::ensure_private_dir(root.run)) {
                throw EnvironmentError(
                    errno_message("cannot make '" + root.run + "' again", errno));
            }
            err = make_dirs(root.run, attempt_, failed, made_);
        }
        if (err == 0) root.attempt = attempt_;
    }
    std::string rest = attempt_;
    if (local_rank >= 0) {
        rest += "/" + std::to_string(local_rank);
        for (const auto& [lr, generation] : generations_) {
            if (lr == local_rank) rest += "_generation_" + std::to_string(generation);
        }
    }
    if (err == 0 && local_rank >= 0) {
        const std::string path = root.run + "/" + rest;
        if (::mkdir(path.c_str(), 0755) == 0) {
            made_.push_back(path);
        } else if (errno != EEXIST) {
            err = errno;
            failed = path;
        }
    }
    if (err == 0) return root.run + "/" + rest;
    if (root.tmpfs && is_out_of_space(err)) {
        // /dev/shm filled up while running: the rest of the run's error files go to disk.
        root.tmpfs = false;
        root.attempt.clear();
        root.path = make_temp("/tmp/ptrun-XXXXXX");
        if (root.path.empty())
            throw EnvironmentError(errno_message("cannot create a directory in /tmp", errno));
        temp_roots_.push_back(root.path);
        make_run_dir(root);
        return worker_dir(root, local_rank);
    }
    throw EnvironmentError(errno_message("cannot create '" + failed + "'", err));
}

std::string LogLayout::error_dir(int local_rank) {
    if (requested_.empty() && errors_.run.empty()) open_error_root();
    if (!requested_.empty()) prepare();
    return worker_dir(requested_.empty() ? errors_ : logs_, local_rank);
}

std::string LogLayout::log_dir(int local_rank) {
    if (!requested_.empty()) prepare();
    if (logs_.run.empty()) open_temp_log_root();
    return worker_dir(logs_, local_rank);
}

std::string LogLayout::settle_temporary_logs(bool may_remove) noexcept {
    if (!requested_.empty() || logs_.path.empty()) return "";
    if (!may_remove) return logs_.run;
    std::error_code ec;
    bool wrote = false;
    for (auto it = std::filesystem::recursive_directory_iterator(logs_.path, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code size_ec;
        if (it->path() == logs_.run + "/" + kRunLogName ||
            it->path() == logs_.run + "/" + kTraceName)
            continue;  // ptrun's own, not workers'

        if (it->is_regular_file(size_ec) && it->file_size(size_ec) > 0 && !size_ec) {
            wrote = true;
            break;
        }
    }
    if (wrote || ec) return logs_.run;  // unreadable: kept, and said where
    std::filesystem::remove_all(logs_.path, ec);
    return ec ? logs_.run : "";
}

std::string LogLayout::attempt_log_dir() {
    if (!requested_.empty()) prepare();
    if (logs_.run.empty()) open_temp_log_root();
    return worker_dir(logs_, -1);
}

}  // namespace ptrun::launcher
