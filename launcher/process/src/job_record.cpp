#include "ptrun/launcher/process/job_record.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ptrun::launcher {
namespace {

bool existing_private_dir(const std::string& dir) {
    struct stat st {};
    return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
           (st.st_mode & 077) == 0;
}

/// True when `dir` is a real directory (not a link) owned by this user with no access for others,
/// creating it when missing.
bool private_dir(const std::string& dir) {
    if (::mkdir(dir.c_str(), 0700) == 0) return true;  // made here: this user's, 0700 or less
    return errno == EEXIST && existing_private_dir(dir);
}

std::string read_fd(int fd) {
    std::string out;
    char buf[4096];
    ssize_t n;
    off_t off = 0;
    while ((n = ::pread(fd, buf, sizeof buf, off)) > 0 && out.size() < (1 << 20)) {
        out.append(buf, static_cast<std::size_t>(n));
        off += n;
    }
    return out;
}

}  // namespace

std::vector<std::string> record_dirs(const env::EnvMap& env) {
    if (auto dir = env::lookup(env, "PTRUN_STATE_DIR"); dir && !dir->empty()) return {*dir};
    const std::string name = "/ptrun-jobs-" + std::to_string(::geteuid());
    return {"/dev/shm" + name, "/tmp" + name};
}

std::string encode_record(const JobRecordData& d) {
    std::string out =
        "pid=" + std::to_string(d.pid) + "\nrun=" + d.run_id + "\ntag=" + d.tag + "\n";
    if (!d.cgroup.empty()) out += "cgroup=" + d.cgroup + "\n";
    for (const auto& t : d.temp_dirs) out += "tmp=" + t + "\n";
    return out;
}

JobRecordData decode_record(const std::string& text) {
    JobRecordData d;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        auto key = line.substr(0, eq);
        auto value = line.substr(eq + 1);
        if (key == "pid") d.pid = static_cast<pid_t>(std::atol(value.c_str()));
        if (key == "run") d.run_id = value;
        if (key == "tag") d.tag = value;
        if (key == "cgroup") d.cgroup = value;
        if (key == "tmp") d.temp_dirs.push_back(value);
    }
    return d;
}

std::unique_ptr<JobRecord> JobRecord::create(JobRecordData data,
                                             const std::vector<std::string>& dirs,
                                             std::string* error) {
    for (const auto& dir : dirs) {
        if (!private_dir(dir)) continue;
        // Locked and written under a name find_dead_jobs ignores, then renamed into place: a
        // record is never seen unlocked or empty.
        const std::string path = dir + "/" + data.tag + ".rec";
        const std::string fresh = dir + "/" + data.tag + ".new";
        const int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
        int fd = ::open(fresh.c_str(), flags, 0600);
        if (fd < 0 && errno == ENOENT && private_dir(dir)) {
            fd = ::open(fresh.c_str(), flags, 0600);  // another ptrun's end removed it meanwhile
        }
        if (fd < 0) {
            ::rmdir(dir.c_str());  // when empty (made for this record): nothing left behind
            continue;
        }
        auto record = std::unique_ptr<JobRecord>(new JobRecord(fresh, fd, std::move(data)));
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) continue;  // the destructor removes it
        record->write();
        if (::rename(fresh.c_str(), path.c_str()) != 0) continue;
        record->path_ = path;
        return record;
    }
    *error = "no usable record directory (a directory of this user only) among:";
    for (const auto& dir : dirs) *error += " " + dir;
    return nullptr;
}

JobRecord::JobRecord(std::string path, int fd, JobRecordData data)
    : path_(std::move(path)), fd_(fd), data_(std::move(data)) {}

JobRecord::~JobRecord() {
    if (!keep_) {
        ::unlink(path_.c_str());
        ::rmdir(path_.substr(0, path_.rfind('/')).c_str());  // when empty: nothing left behind
    }
    ::close(fd_);
}

void JobRecord::write() {
    const std::string text = encode_record(data_);
    // Over the old text; cut only when shorter (a record grows: truncating to 0 first would free
    // tmpfs' page and take a new one for every update).
    if (::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) return;
    if (text.size() < written_ && ::ftruncate(fd_, static_cast<off_t>(text.size())) != 0) return;
    written_ = text.size();
}

void JobRecord::set_cgroup(const std::string& path) {
    data_.cgroup = path;
    write();
}

void JobRecord::add_temp_dir(const std::string& path) {
    for (const auto& t : data_.temp_dirs) {
        if (t == path) return;
    }
    data_.temp_dirs.push_back(path);
    write();
}

std::vector<DeadJob> find_dead_jobs(const std::vector<std::string>& dirs) {
    std::vector<DeadJob> out;
    for (const auto& dir : dirs) {
        if (!existing_private_dir(dir)) continue;
        DIR* d = ::opendir(dir.c_str());
        if (!d) continue;
        while (auto* e = ::readdir(d)) {
            std::string name = e->d_name;
            if (name.size() < 5 || name.compare(name.size() - 4, 4, ".rec") != 0) continue;
            DeadJob job;
            job.path = dir + "/" + name;
            job.fd = ::open(job.path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
            if (job.fd < 0) continue;
            if (::flock(job.fd, LOCK_EX | LOCK_NB) != 0) {  // its ptrun is alive
                ::close(job.fd);
                continue;
            }
            struct stat st {};
            if (::fstat(job.fd, &st) != 0 || st.st_nlink == 0) {  // removed meanwhile
                ::close(job.fd);
                continue;
            }
            job.data = decode_record(read_fd(job.fd));
            out.push_back(std::move(job));
        }
        ::closedir(d);
    }
    return out;
}

void forget(DeadJob& job) {
    ::unlink(job.path.c_str());
    ::rmdir(job.path.substr(0, job.path.rfind('/')).c_str());
    ::close(job.fd);
    job.fd = -1;
}

void release(DeadJob& job) {
    ::close(job.fd);
    job.fd = -1;
}

}  // namespace ptrun::launcher
