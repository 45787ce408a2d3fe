#include "ptrun/launcher/process/containment.hpp"

#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ptrun/launcher/process/cgroup.hpp"
#include "ptrun/launcher/process/job_record.hpp"
#include "ptrun/launcher/process/process_sweep.hpp"

namespace ptrun::launcher {
namespace {

using std::chrono::milliseconds;

/// How long the end of a job waits for killed processes to be gone.
constexpr milliseconds kFinalWait{5'000};

std::string make_tag() {
    std::uint32_t r = 0;
    if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
        r = static_cast<std::uint32_t>(::time(nullptr));
    }
    char text[32];
    std::snprintf(text, sizeof text, "%d-%08x", static_cast<int>(::getpid()), r);
    return text;
}

/// Now, in the clock ticks of /proc/PID/stat's start time (since boot).
std::uint64_t now_ticks() {
    timespec ts{};
    ::clock_gettime(CLOCK_BOOTTIME, &ts);
    const auto hz = static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
    return static_cast<std::uint64_t>(ts.tv_sec) * hz +
           static_cast<std::uint64_t>(ts.tv_nsec) / (1'000'000'000ULL / hz);
}

/// True when `path` is a ptrun temporary directory (ptrun-XXXXXX) of this user: the only kind of
/// path a cleanup removes.
bool removable_temp_dir(const std::string& path) {
    const auto name = std::filesystem::path(path).filename().string();
    struct stat st {};
    return name.rfind("ptrun-", 0) == 0 && ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == ::geteuid();
}

}  // namespace

ContainmentOptions containment_options(const std::string& run_id, const env::EnvMap& env) {
    ContainmentOptions o;
    o.run_id = run_id;
    o.use_cgroup = env::lookup(env, "PTRUN_CGROUP").value_or("1") != "0";
    o.record_dirs = record_dirs(env);
    return o;
}

Containment::Containment(const ContainmentOptions& options, std::shared_ptr<spdlog::logger> log)
    : log_(std::move(log)), tag_(make_tag()) {
    int subreaper = 0;
    subreaper_ = ::prctl(PR_GET_CHILD_SUBREAPER, &subreaper) == 0 && subreaper != 0;
    clean_dead_jobs(options.record_dirs);
    // The record names the cgroup before the cgroup exists: a ptrun SIGKILLed in between leaves a
    // record of a cgroup never made (nothing to remove), never a cgroup no record names.
    const std::string parent = options.use_cgroup ? own_cgroup_dir() : std::string();
    const std::string name = "ptrun-" + tag_;
    std::string error;
    JobRecordData data;
    data.pid = ::getpid();
    data.run_id = options.run_id;
    data.tag = tag_;
    if (!parent.empty()) data.cgroup = job_cgroup_path(parent, name);
    record_ = JobRecord::create(std::move(data), options.record_dirs, &error);
    if (!record_) {
        log_->debug("no job record ({}): a SIGKILLed ptrun's leftovers would not be found", error);
    }
    if (options.use_cgroup) {
        cgroup_ = JobCgroup::create(parent, name, &no_cgroup_reason_);
        if (!cgroup_ && record_ && !parent.empty()) record_->set_cgroup("");
    } else {
        no_cgroup_reason_ = "PTRUN_CGROUP=0";
    }
    log_->debug("containment: {}", describe());
}

Containment::~Containment() {
    attempt_running_ = false;
    // Every descendant is in the cgroup (nothing here moves processes out of it), so an empty
    // cgroup means nothing is left; without one, ptrun's children are ended layer by layer.
    bool empty = false;
    if (cgroup_) {  // when workers ran outside it too (placing failed), the sweep below still runs
        empty = cgroup_->kill_all(kFinalWait);
        if (!empty) {
            log_->warn(
                "processes in cgroup {} were still running {} ms after SIGKILL (uninterruptible "
                "sleep?); leaving the cgroup for the next ptrun to remove",
                cgroup_->path(), kFinalWait.count());
        }
    }
    if (!empty || !cgroup_whole_) kill_descendants(kFinalWait);
    if (cgroup_ && !cgroup_->remove() && record_) record_->keep_for_cleanup();
    cgroup_.reset();
    record_.reset();
}

bool become_child_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

std::string Containment::describe() const {
    const std::string subreaper = subreaper_ ? "subreaper" : "no subreaper";
    std::string out = cgroup_ && cgroup_whole_
                          ? "cgroup v2 " + cgroup_->path() + " (cgroup.kill) + " + subreaper
                          : subreaper + " (no cgroup: " + no_cgroup_reason_ + ")";
    out += record_ ? " + job record" : " (no job record)";
    return out;
}

std::string Containment::worker_tag(const std::string& inherited) const {
    return inherited.empty() ? tag_ : inherited + ":" + tag_;
}

int Containment::cgroup_dir_fd() const { return cgroup_ && cgroup_whole_ ? cgroup_->dir_fd() : -1; }

int Containment::cgroup_procs_fd() { return cgroup_ && cgroup_whole_ ? cgroup_->procs_fd() : -1; }

void Containment::cgroup_join_failed(int err) {
    if (!cgroup_ || !cgroup_whole_) return;
    log_->warn(
        "a worker could not join cgroup {}: {}; containing workers without it (subreaper only)",
        cgroup_->path(), std::strerror(err));
    no_cgroup_reason_ = std::string("joining it failed: ") + std::strerror(err);
    cgroup_whole_ = false;  // kept: the workers already in it are still ended through it
}

int Containment::helper_cgroup_dir_fd() {
    if (!cgroup_ || !cgroup_whole_) return -1;
    std::string error;
    const int fd = cgroup_->helper_dir_fd(&error);
    if (fd < 0) log_->warn("{}; a helper runs outside the job's cgroup (subreaper only)", error);
    return fd;
}

void Containment::note_temp_dir(const std::string& path) {
    if (record_ && !path.empty()) record_->add_temp_dir(path);
}

void Containment::attempt_started() {
    attempt_running_ = true;
    attempt_start_ticks_ = now_ticks();
    std::string error;
    if (cgroup_ && cgroup_whole_ && !cgroup_->prepare_attempt(&error)) {
        log_->warn("{}; containing workers without a cgroup (subreaper only)", error);
        no_cgroup_reason_ = error;
        cgroup_whole_ = false;
    }
}

void Containment::attempt_ended(const std::vector<pid_t>& helpers) {
    attempt_running_ = false;
    if (cgroup_) cgroup_->kill_attempt();  // every descendant of the attempt, in one step
    if (cgroup_ && cgroup_whole_) return;
    for (pid_t child : own_children()) {
        if (std::find(helpers.begin(), helpers.end(), child) == helpers.end())
            ::kill(child, SIGKILL);
    }
}

void Containment::children_reaped(const std::vector<pid_t>& spared) {
    if (cgroup_ && cgroup_whole_)
        return;  // attempt_ended's cgroup.kill ends everything of an attempt
    for (pid_t child : own_children()) {
        if (std::find(spared.begin(), spared.end(), child) != spared.end()) continue;
        if (attempt_running_) {
            const auto born = start_ticks(child);
            if (born == 0 || born >= attempt_start_ticks_) continue;  // gone, or of this attempt
        }
        ::kill(child, SIGKILL);
    }
}

void Containment::clean_dead_jobs(const std::vector<std::string>& record_dirs) {
    for (auto& job : find_dead_jobs(record_dirs)) {
        std::string done;
        bool cgroup_left = false;
        if (!job.data.cgroup.empty()) {
            int n = destroy_cgroup(job.data.cgroup, kFinalWait);
            if (n < 0) {
                cgroup_left = true;
                log_->warn(
                    "cgroup {} of a killed ptrun (pid {}) could not be emptied and removed; its "
                    "record stays for the next ptrun to try again",
                    job.data.cgroup, job.data.pid);
            } else if (n > 0) {
                done += std::to_string(n) + " process(es) in its cgroup killed; ";
            }
        }
        int tagged = 0;
        for (pid_t p : tagged_processes(job.data.tag)) {
            if (::kill(p, SIGKILL) == 0) ++tagged;
        }
        if (tagged > 0) done += std::to_string(tagged) + " tagged process(es) killed; ";
        std::vector<std::string> removed;
        for (const auto& dir : job.data.temp_dirs) {
            if (!removable_temp_dir(dir)) continue;
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
            if (!ec) removed.push_back(dir);
        }
        if (cgroup_left) {
            release(job);  // the record stays: the cgroup would otherwise leak for good
        } else {
            forget(job);  // removes the record (and its directory once empty)
        }
        const bool killed = !done.empty();  // processes that may hold what this job needs
        for (const auto& dir : removed) done += dir + " removed; ";
        if (done.empty()) done = "nothing was left; ";
        done.resize(done.size() - 2);
        // Processes ended are news on the console (they may have held GPUs or ports this job
        // needs); a removed record or directory is the run log's alone, not noise in every job.
        log_->log(killed ? spdlog::level::info : spdlog::level::debug,
                  "cleaned up after ptrun pid {} (run '{}'), which ended without cleaning up: {}",
                  job.data.pid, job.data.run_id, done);
    }
}

std::string explain_containment(const env::EnvMap& env) {
    if (env::lookup(env, "PTRUN_CGROUP").value_or("1") == "0")
        return "subreaper only (PTRUN_CGROUP=0)";
    const std::string parent = own_cgroup_dir();
    const std::string why = cgroup_unusable_reason(parent);
    if (why.empty()) return "cgroup v2 under " + parent + " (cgroup.kill) + subreaper";
    return "subreaper only (" + why + ")";
}

}  // namespace ptrun::launcher
