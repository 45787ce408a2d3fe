// The agent's watchdog (issue 15): heartbeat records per worker, one hang timer on the agent's
// io_context (never a polling loop), evidence before action on a hang, the health endpoint and
// torch's file timer. Everything here runs only when `watch` exists (agent_watch.hpp).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <system_error>

#include "agent_impl.hpp"
#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/agent/early_health.hpp"
#include "ptrun/launcher/output/console_stream.hpp"
#include "ptrun/launcher/output/duration_text.hpp"
#include "ptrun/launcher/output/hang_report.hpp"
#include "ptrun/launcher/process/environment_error.hpp"
#include "ptrun/sys/private_dir.hpp"
#include "ptrun/sys/signal_caught.hpp"
#include "ptrun/watchdog/dump_wait.hpp"
#include "ptrun/watchdog/stack_summary.hpp"

namespace ptrun::launcher {
namespace {

using watchdog::Clock;

constexpr const char* kTimerEnable = "TORCHELASTIC_ENABLE_FILE_TIMER";
constexpr const char* kTimerFile = "TORCHELASTIC_TIMER_FILE";
// What the Python runner (python/ptrun/_runner.py) reads, and removes, from its environment.
constexpr std::string_view kStackFileEnv = "PTRUN_STACK_FILE";
constexpr std::string_view kStackSignalEnv = "PTRUN_STACK_SIGNAL";

/// The signal on which the runner's faulthandler writes every thread's Python stack and the
/// worker goes on: a real-time signal near the top, which programs and libraries rarely take.
int python_stack_signal() { return SIGRTMAX - 3; }

/// mkdtemp of ptrun-XXXXXX on /dev/shm (records are read and written as memory), else under
/// $TMPDIR or /tmp; "" with errno set when none can be made.
std::string make_private_dir(const env::EnvMap& env) {
    std::vector<std::string> roots{"/dev/shm"};
    if (auto tmp = env::lookup(env, "TMPDIR"); tmp && !tmp->empty()) roots.push_back(*tmp);
    roots.push_back("/tmp");
    int err = 0;
    for (const auto& root : roots) {
        std::string pattern = root + "/ptrun-XXXXXX";
        if (::mkdtemp(pattern.data())) return pattern;
        err = errno;
    }
    errno = err;
    return "";
}

/// A hang timer this late was not served because ptrun itself was not running (stopped with its
/// workers, `scontrol suspend`, a cgroup freezer that sends no SIGCONT): it samples again from
/// now instead of judging time nobody could watch. A loaded machine delays a timer by far less.
constexpr auto kLateCheck = std::chrono::seconds(1);

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

/// A faulthandler dump without the lines of the runner's own frame (the outermost of the main
/// thread), so that the stacks show the user's program as `python3 -u SCRIPT` would.
std::string without_runner_frames(const std::string& dump, const std::string& runner) {
    const std::string frame = "File \"" + runner + "\"";
    std::string out;
    std::size_t at = 0;
    while (at < dump.size()) {
        auto end = dump.find('\n', at);
        end = end == std::string::npos ? dump.size() : end + 1;
        const std::string_view line(dump.data() + at, end - at);
        if (line.find(frame) == std::string_view::npos) out.append(line);
        at = end;
    }
    return out;
}

/// Wall-clock seconds since the epoch: the clock FileTimerClient stamps its requests with.
double wall_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

void Agent::Impl::create_stack_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) throw EnvironmentError(errno_message("cannot create '" + path + "'", errno));
    ::close(fd);
}

void Agent::Impl::remove_stack_files() {
    for (const auto& path : watch->stack_files) ::unlink(path.c_str());
    watch->stack_files.clear();
}

Watch::~Watch() {
    for (auto* wait : {&dump_wait, &stacks_wait}) {
        if (*wait) (*wait)->cancel();
    }
    for (auto& wait : timer_dumps) wait->cancel();
    records.clear();
    fifo.reset();
    if (!dir.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
}

bool Agent::Impl::open_watch() {
    const bool file_timer = env::lookup(parent_env, kTimerEnable).value_or("") == "1";
    if (!config.hang_timeout && !config.health_port && !file_timer) return true;
    watch = std::make_unique<Watch>(io);
    watch->records_wanted = config.hang_timeout || config.health_port;
    watch->watching_since = Clock::now();
    if (config.hang_timeout) {
        watch->tool = watchdog::find_stack_tool(env::lookup(parent_env, "PATH").value_or(""));
    }
    if (watch->records_wanted || file_timer) {
        watch->dir = make_private_dir(parent_env);
        if (watch->dir.empty()) {
            log->error("{}", errno_message("cannot make a directory for heartbeat records in "
                                           "/dev/shm, $TMPDIR or /tmp",
                                           errno));
            return false;
        }
        launcher->note_temp_dir(watch->dir);  // removed after a kill -9 of ptrun too
    }
    if (config.health_port) {
        watch->health_warnings = std::make_unique<WarningLimiter>(log, "more endpoint errors");
        watchdog::HealthServerOptions options;
        options.address = config.health_addr;
        options.port = *config.health_port;
        options.adopt_fd = health_listener.get();  // served since ptrun's start: said then
        try {
            watch->health = std::make_unique<watchdog::HealthServer>(
                io, options, [this] { return status_snapshot(); },
                [this](const std::string& e) {
                    watch->health_warnings->warn("health endpoint: " + e);
                },
                [this](watchdog::HealthServer::StacksReply reply) {
                    request_stacks(std::move(reply));
                },
                [this](const std::string& query, watchdog::HealthServer::StacksReply reply) {
                    answer_logs(query, std::move(reply));
                });
        } catch (const watchdog::HealthServerError& e) {
            log->error("--health-port: {}", e.what());
            return false;
        }
        if (!health_listener) {
            log->info("{}", health_endpoint_line(config, watch->health->port()));
        }
        health_listener.reset();  // the server holds its own duplicate
    }
    if (file_timer) {
        watch->fifo_warnings = std::make_unique<WarningLimiter>(log, "more bad timer requests");
        auto path = env::lookup(parent_env, kTimerFile).value_or("");
        if (path.empty()) path = watch->dir + "/watchdog_timer";
        try {
            open_timer_fifo(path);
        } catch (const watchdog::TimerFifoError& e) {
            log->error("{}=1: {}", kTimerEnable, e.what());
            return false;
        }
        log->info("serving torch's file timer at {} ({})", path, kTimerFile);
    }
    return true;
}

void Agent::Impl::open_timer_fifo(const std::string& path) {
    watch->fifo.reset();
    watch->fifo = std::make_unique<watchdog::TimerFifo>(
        io, path, [this](const watchdog::TimerRequest& r) { on_timer_request(r); },
        [this](const std::string& e) { watch->fifo_warnings->warn("torch file timer: " + e); });
}

void Agent::Impl::restore_watch_files() {
    if (!watch->dir.empty() && ::access(watch->dir.c_str(), F_OK) != 0) {
        if (!sys::ensure_private_dir(watch->dir)) {
            throw EnvironmentError(errno_message("cannot make '" + watch->dir + "' again", errno));
        }
        log->warn("{} was removed during the run (a worker's clean-up?): made again", watch->dir);
    }
    if (watch->fifo && ::access(watch->fifo->path().c_str(), F_OK) != 0) {
        const std::string path = watch->fifo->path();
        try {
            open_timer_fifo(path);
        } catch (const watchdog::TimerFifoError& e) {
            throw EnvironmentError(std::string("torch's file timer: ") + e.what());
        }
        log->warn("torch's file-timer FIFO {} was removed during the run: made again", path);
    }
}

void Agent::Impl::watch_attempt(std::vector<SpawnRequest>& requests) {
    restore_watch_files();
    watch->hang.reset();
    watch->records.clear();
    remove_stack_files();
    watch->timer_requests.assign(requests.size(), 0);
    watch->timer_last.assign(requests.size(), std::nullopt);
    watch->record_reported.assign(requests.size(), false);
    for (std::size_t lr = 0; lr < requests.size(); ++lr) watch_worker(lr, requests[lr]);
}

void Agent::Impl::watch_worker(std::size_t lr, SpawnRequest& request) {
    auto& env = request.env;
    // A replacement (--restart-policy failed) gets files of its own: its generation in the name.
    const std::string name =
        fmt::format("{}-{}-{}{}", placement.round, state.restart_count, lr,
                    state.generation > 0 ? fmt::format("-g{}", state.generation) : std::string());
    if (watch->records_wanted) {
        const std::string path = fmt::format("{}/hb-{}", watch->dir, name);
        try {
            auto record = progress::HeartbeatFile::create(path, static_cast<int>(lr));
            if (lr < watch->records.size()) {
                watch->records[lr] = std::move(record);
            } else {
                watch->records.push_back(std::move(record));
            }
        } catch (const progress::HeartbeatError& e) {
            throw EnvironmentError(e.what());
        }
        env[std::string(progress::kHeartbeatEnv)] = path;
    }
    if ((config.hang_timeout || config.health_port || watch->fifo) && !command.runner.empty()) {
        // The runner dumps every thread's Python stack into this file on the signal.
        const auto path = fmt::format("{}/py-stacks-{}", watch->dir, name);
        create_stack_file(path);
        if (lr < watch->stack_files.size()) {
            ::unlink(watch->stack_files[lr].c_str());
            watch->stack_files[lr] = path;
        } else {
            watch->stack_files.push_back(path);
        }
        env[std::string(kStackFileEnv)] = path;
        env[std::string(kStackSignalEnv)] = std::to_string(python_stack_signal());
    }
    if (config.hang_timeout && !command.interpreter.empty() && command.runner.empty()) {
        // Without the runner, a Python worker ended for a hang prints every thread on
        // SIGABRT into its stderr (stacks.hpp).
        if (!env.count("PYTHONFAULTHANDLER")) env["PYTHONFAULTHANDLER"] = "1";
    }
    if (config.hang_timeout) request.allow_stack_capture = true;
    if (watch->fifo) env[kTimerFile] = watch->fifo->path();
    if (lr < watch->timer_requests.size()) {
        watch->timer_requests[lr] = 0;
        watch->timer_last[lr] = std::nullopt;
        watch->record_reported[lr] = false;
    }
}

void Agent::Impl::watch_started() {
    if (!config.hang_timeout) return;
    arm_hang_check(Clock::now() + *config.hang_timeout);
}

void Agent::Impl::arm_hang_check(Clock::time_point at) {
    watch->check_due = at;
    watch->check_armed = true;
    watch->hang_timer.expires_at(at);
    watch->hang_timer.async_wait([this](boost::system::error_code ec) {
        if (!ec && !finished) check_hangs();
    });
}

std::vector<watchdog::RankProgress> Agent::Impl::sample_progress() const {
    std::vector<watchdog::RankProgress> ranks;
    ranks.reserve(workers.size());
    for (std::size_t lr = 0; lr < workers.size(); ++lr) {
        const auto& w = workers[lr];
        watchdog::RankProgress r;
        r.local_rank = static_cast<int>(lr);
        if (!w.alive) {
            r.activity = watchdog::RankActivity::Exited;
            r.exited_ok = w.end.exit.succeeded() && w.end.pid != 0;
            if (w.exited_at != Clock::time_point{}) r.exited_at = w.exited_at;
        } else if (w.stopped) {
            r.activity = watchdog::RankActivity::Stopped;
            r.stopped_since = w.stopped_at;
            r.stop_signal = w.stop_signal;
        }
        if (lr < watch->records.size()) {
            const auto sample = watch->records[lr].read();
            r.count = sample.count;
            if (sample.last_progress_ns != 0) {
                r.last_progress = progress::to_steady(sample.last_progress_ns);
            }
            r.record_problem = sample.problem;
            if (sample.section) {
                r.section = sample.section->name;
                if (sample.section->deadline_ns != 0) {
                    r.section_deadline = progress::to_steady(sample.section->deadline_ns);
                }
            }
        }
        if (lr < watch->timer_requests.size() && watch->timer_requests[lr] > 0) {
            r.count += watch->timer_requests[lr];  // a timer request is progress too
            if (!r.last_progress || *r.last_progress < *watch->timer_last[lr]) {
                r.last_progress = watch->timer_last[lr];
            }
        }
        ranks.push_back(std::move(r));
    }
    return ranks;
}

Clock::time_point Agent::Impl::judging_since(Clock::time_point now) const {
    if (watch->check_armed && now - watch->check_due > kLateCheck) return now;
    return watch->watching_since;
}

void Agent::Impl::check_hangs() {
    const auto now = Clock::now();
    watch->watching_since = judging_since(now);
    watch->check_armed = false;
    if (state.stopping || state.alive == 0 || watch->hang) return;  // ending anyway
    if (terminal.holder() != 0) {
        // A worker holds the terminal (pdb, input()): a person is at work; nobody is judged
        // until it gives the terminal back (terminal_returned() restarts the clock).
        arm_hang_check(now + *config.hang_timeout);
        return;
    }
    auto ranks = sample_progress();
    report_damaged_records(ranks);
    explain_hang_clock(ranks);
    auto verdict = watchdog::judge_hangs(ranks, *config.hang_timeout, now, watch->watching_since);
    if (!verdict.hung.empty()) {
        on_hang(std::move(verdict), std::move(ranks));
        return;
    }
    // Never later than one timeout from now: a first beat or a section is only learnt here.
    auto next = now + *config.hang_timeout;
    if (verdict.next_check && *verdict.next_check < next) next = *verdict.next_check;
    arm_hang_check(next);
}

void Agent::Impl::explain_hang_clock(const std::vector<watchdog::RankProgress>& ranks) {
    if (watch->clock_explained) return;
    std::vector<int> silent;
    for (const auto& r : ranks) {
        if (r.activity == watchdog::RankActivity::Running && r.count == 0 && !r.section) {
            silent.push_back(workers[static_cast<std::size_t>(r.local_rank)].end.rank);
        }
    }
    if (silent.empty()) return;
    watch->clock_explained = true;
    const char* beats = !command.runner.empty()
                            ? "a torch optimizer step (the Python runner counts them), a "
                              "ptrun.heartbeat call or a file-timer request"
                        : !command.interpreter.empty()
                            ? "a ptrun.heartbeat call or a file-timer request (--no-runner: "
                              "optimizer steps are not counted)"
                            : "a ptrun::ddp collective, a heartbeat from ptrun/progress/"
                              "heartbeat.h or a file-timer request";
    log->info(
        "rank(s) {} have made no progress yet after {}: --hang-timeout judges a worker from its "
        "first progress ({}); until then it is starting up, unless a local peer has exited 0",
        watchdog::format_ranks(silent), seconds_text(*config.hang_timeout), beats);
}

void Agent::Impl::report_damaged_records(const std::vector<watchdog::RankProgress>& ranks) {
    for (const auto& r : ranks) {
        const auto lr = static_cast<std::size_t>(r.local_rank);
        if (r.record_problem.empty() || lr >= watch->record_reported.size() ||
            watch->record_reported[lr]) {
            continue;
        }
        watch->record_reported[lr] = true;
        log->warn(
            "{}: its heartbeat record {}; its progress is unknown from now on (--hang-timeout "
            "judges it as a worker that never beat)",
            who(workers[lr]), r.record_problem);
    }
}

void Agent::Impl::on_hang(watchdog::HangVerdict verdict,
                          std::vector<watchdog::RankProgress> ranks) {
    const auto now = Clock::now();
    const auto& first = verdict.hung.front();
    auto& w = workers[static_cast<std::size_t>(first.local_rank)];
    const auto what =
        watchdog::describe_hang(first, ranks[static_cast<std::size_t>(first.local_rank)], now);
    std::vector<pid_t> pids;
    for (const auto& worker : workers) {
        if (worker.alive && worker.end.pid > 0) pids.push_back(worker.end.pid);
    }
    log->warn("{} is hung: {} (--hang-timeout {}); capturing the stacks of {} local worker(s)",
              who(w), what, seconds_text(*config.hang_timeout), pids.size());
    record(Phase::Hang, -1, who(w) + " is hung: " + what);
    watch->hang = Watch::Hang{now, std::move(verdict), std::move(ranks), {}, pids, "", 0, ""};
    watch->hangs += 1;
    // First, while they run, the runner's faulthandler writes each one's Python stacks; only to a
    // worker that catches the signal (one that exec'd another program would die of it). Then
    // the native capture, which pauses them.
    if (watch->stacks_wait) watch->stacks_wait->cancel();  // a GET /stacks: answered below
    watch->stacks_wait.reset();
    for (auto& reply : std::exchange(watch->stacks_replies, {})) {
        reply(503, "a hang is being handled: its report and stack files will have every stack");
    }
    auto dumps = signal_python_stacks();
    if (dumps.empty()) {
        capture_native();
        return;
    }
    const auto serial = watch->hang_serial;
    watch->dump_wait = watchdog::DumpWait::start(io, std::move(dumps), {}, [this, serial] {
        watch->dump_wait.reset();
        if (!finished && watch->hang && watch->hang_serial == serial) capture_native();
    });
}

bool Agent::Impl::signal_python_stack(std::size_t lr) {
    if (lr >= watch->stack_files.size() || lr >= workers.size()) return false;
    const auto& worker = workers[lr];
    if (!worker.alive || worker.end.pid <= 0 ||
        !sys::signal_caught(worker.end.pid, python_stack_signal()))
        return false;
    // Empty, so that what it holds after the signal is this dump (the runner appends).
    return ::truncate(watch->stack_files[lr].c_str(), 0) == 0 &&
           ::kill(worker.end.pid, python_stack_signal()) == 0;
}

std::string Agent::Impl::runner_dump(std::size_t lr) const {
    if (lr >= watch->stack_files.size()) return "";
    return without_runner_frames(tail_of_file(watch->stack_files[lr], 4000), command.runner);
}

std::vector<std::string> Agent::Impl::signal_python_stacks() {
    std::vector<std::string> dumps;
    for (std::size_t lr = 0; lr < watch->stack_files.size() && lr < workers.size(); ++lr) {
        if (signal_python_stack(lr)) dumps.push_back(watch->stack_files[lr]);
    }
    return dumps;
}

void Agent::Impl::request_stacks(watchdog::HealthServer::StacksReply reply) {
    if (watch->hang) {
        reply(503, "a hang is being handled: its report and stack files will have every stack");
        return;
    }
    watch->stacks_replies.push_back(std::move(reply));
    if (watch->stacks_wait) return;  // the dumps under way answer this request too
    auto answer = [this] {
        watch->stacks_wait.reset();
        std::string text;
        for (std::size_t lr = 0; lr < workers.size(); ++lr) {
            const auto& w = workers[lr];
            text += fmt::format("== rank {} (local rank {}, pid {})\n", w.end.rank,
                                w.end.local_rank, w.end.pid);
            std::string dump;
            if (w.alive) dump = runner_dump(lr);
            if (!dump.empty()) {
                text += dump + (dump.back() == '\n' ? "" : "\n");
            } else if (!w.alive) {
                text += "(not running)\n";
            } else if (command.runner.empty()) {
                text += "(no Python stack: not a Python worker started through ptrun's runner)\n";
            } else {
                text += "(no Python stack: it did not answer " +
                        signal_name(python_stack_signal()) + " within 1 s)\n";
            }
        }
        for (auto& r : std::exchange(watch->stacks_replies, {})) r(200, text);
    };
    auto dumps = signal_python_stacks();
    if (dumps.empty()) {
        answer();
        return;
    }
    watch->stacks_wait = watchdog::DumpWait::start(io, std::move(dumps), {}, answer);
}

void Agent::Impl::capture_native() {
    const auto& pids = watch->hang->pids;
    if (!watch->tool) {
        watch->hang->native_note =
            "no native stacks: neither eu-stack (elfutils) nor gdb is on PATH";
        hang_captured({});
        return;
    }
    watchdog::CommandLimits limits;
    limits.timeout = std::chrono::seconds(10);
    // A capture cut short by the attempt's end reports after it: never into a later hang.
    const auto serial = ++watch->hang_serial;
    watch->capture =
        watchdog::StackCapture::start(io, *watch->tool, pids, limits, 2,
                                      [this, serial](std::vector<watchdog::NativeStacks> native) {
                                          if (!finished && watch->hang_serial == serial)
                                              hang_captured(std::move(native));
                                      });
}

void Agent::Impl::hang_captured(std::vector<watchdog::NativeStacks> native) {
    watch->capture.reset();
    if (!watch->hang) return;
    auto& hang = *watch->hang;
    hang.native = std::move(native);
    // The stacks may single out a rank (the runner's Python stacks are in already): it is the
    // one to name, not whichever stopped beating first.
    std::vector<watchdog::RankStacks> stacks;
    bool python_terminal = false;
    for (std::size_t lr = 0; lr < workers.size(); ++lr) {
        if (auto rs = captured_stacks(hang, lr, python_terminal)) stacks.push_back(std::move(*rs));
    }
    const auto& first = hang.verdict.hung.front();
    hang.culprit = first.local_rank;
    std::string cause =
        "hung: " + watchdog::describe_hang(
                       first, hang.ranks[static_cast<std::size_t>(first.local_rank)], hang.at);
    if (auto odd = watchdog::odd_one_out(stacks)) {
        for (std::size_t lr = 0; lr < workers.size(); ++lr) {
            if (workers[lr].end.rank == odd->rank) hang.culprit = static_cast<int>(lr);
        }
        hang.culprit_why = odd->why;
        cause = "hung: " + odd->why;
        for (const auto& h : hang.verdict.hung) {
            if (h.local_rank != hang.culprit) continue;
            cause = "hung: " +
                    watchdog::describe_hang(h, hang.ranks[static_cast<std::size_t>(h.local_rank)],
                                            hang.at) +
                    "; " + odd->why;
        }
    }
    auto& w = workers[static_cast<std::size_t>(hang.culprit)];
    w.end.hung = true;
    w.end.cause = cause;
    // Without the runner, Python workers end by SIGABRT so that faulthandler prints where every
    // thread is; the runner's have written theirs already.
    const int signo =
        command.interpreter.empty() || !watch->stack_files.empty() ? SIGTERM : SIGABRT;
    apply(HangDetected{hang.culprit, signo});
}

std::optional<watchdog::RankStacks> Agent::Impl::captured_stacks(const Watch::Hang& hang,
                                                                 std::size_t lr,
                                                                 bool& python_terminal) const {
    const auto& w = workers[lr];
    auto pid_at = std::find(hang.pids.begin(), hang.pids.end(), w.end.pid);
    if (pid_at == hang.pids.end()) return std::nullopt;  // it had exited before the hang
    watchdog::RankStacks rs;
    rs.rank = w.end.rank;
    rs.local_rank = w.end.local_rank;  // its LOCAL_RANK (the launcher's in per-rank mode)
    rs.pid = w.end.pid;
    const auto index = static_cast<std::size_t>(pid_at - hang.pids.begin());
    if (index < hang.native.size()) {
        rs.native = hang.native[index].threads;
        rs.native_text = hang.native[index].text;
        rs.note = hang.native[index].note;
    } else {
        rs.note = hang.native_note;
    }
    if (lr < watch->stack_files.size()) {
        rs.python_text = runner_dump(lr);
        rs.python = watchdog::parse_python_faulthandler(rs.python_text);
        if (rs.python.empty()) {
            rs.python_text.clear();
            rs.note += std::string(rs.note.empty() ? "" : "; ") +
                       "no Python stack: the worker did not answer the stack signal (" +
                       signal_name(python_stack_signal()) + ")";
        }
    } else if (!command.interpreter.empty()) {
        if (w.end.stderr_log.empty()) {
            python_terminal = true;
        } else {
            rs.python_text = tail_of_file(w.end.stderr_log, 4000);
            rs.python = watchdog::parse_python_faulthandler(rs.python_text);
            if (rs.python.empty()) rs.python_text.clear();
        }
    }
    return rs;
}

void Agent::Impl::end_watch_attempt() {
    watch->hang_timer.cancel();
    watch->check_armed = false;
    if (watch->capture) watch->capture->cancel();
    if (watch->dump_wait) watch->dump_wait->cancel();
    watch->dump_wait.reset();
    if (watch->stacks_wait) watch->stacks_wait->cancel();
    watch->stacks_wait.reset();
    for (auto& reply : std::exchange(watch->stacks_replies, {})) {
        reply(503, "the workers ended before their stacks were written");
    }
    for (auto& wait : std::exchange(watch->timer_dumps, {})) wait->cancel();
    for (const auto& w : workers) {
        if (w.end.pid > 0) watch->timers.forget_pid(w.end.pid);
    }
    arm_timer_expiry();
    auto hang = std::move(watch->hang);
    watch->hang.reset();
    ++watch->hang_serial;  // a capture still running reports to nobody
    if (!hang) {
        watch->records.clear();
        return;
    }
    HangReport report;
    report.host = config.hostname;
    report.first = workers[static_cast<std::size_t>(hang->culprit)].end.local_rank;
    report.first_why = hang->culprit_why;
    std::vector<watchdog::RankStacks> stacks;
    bool python_terminal = false;
    for (std::size_t lr = 0; lr < workers.size(); ++lr) {
        const auto& w = workers[lr];
        const auto& progress = hang->ranks[lr];
        HangReportRank row;
        row.rank = w.end.rank;
        row.local_rank = w.end.local_rank;
        row.pid = w.end.pid;
        row.count = progress.count;
        if (progress.last_progress) {
            row.seconds_since_progress = seconds_between(*progress.last_progress, hang->at);
        }
        row.section = progress.section;
        for (const auto& h : hang->verdict.hung) {
            if (h.local_rank != static_cast<int>(lr)) continue;  // the detector's index
            row.hung = true;
            row.what = watchdog::describe_hang(h, progress, hang->at);
        }
        report.ranks.push_back(row);
        if (auto rs = captured_stacks(*hang, lr, python_terminal)) {
            if (static_cast<int>(lr) == hang->culprit && !watch->stack_files.empty()) {
                report.first_python_stack = rs->python_text;  // the runner's dump alone
            }
            stacks.push_back(std::move(*rs));
        }
    }
    report.where = watchdog::summarise_stacks(stacks);
    if (report.first_why.empty() && stacks.size() > 1) {
        report.notes.push_back(
            "no rank's stack stands out: the first named is the one whose last progress is oldest");
    }
    if (!hang->native_note.empty()) report.notes.push_back(hang->native_note);
    if (python_terminal) {
        report.notes.push_back(
            "Python tracebacks went to the terminal above (--redirects 2 or --tee 2 puts them "
            "in the report and the stack files)");
    }
    try {
        auto rank_dir = logs.log_dir(report.first);
        report.stacks_dir = std::filesystem::path(rank_dir).parent_path().string();
        watchdog::write_stacks(report.stacks_dir, stacks);
        announce_logs();
    } catch (const std::exception& e) {
        report.stacks_dir.clear();
        report.notes.push_back(std::string("stacks not written: ") + e.what());
    }
    if (state.stop_signal) {
        report.outcome = "ptrun was stopped by " + signal_name(state.stop_signal);
    } else if (!watch->outcome.empty()) {
        report.outcome = watch->outcome;
    } else if (state.distributed) {
        report.outcome = "reported to the other nodes; the rendezvous decides whether to restart";
    }
    watch->outcome.clear();
    console->say(format_hang_report(report));
    watch->records.clear();
}

watchdog::StatusSnapshot Agent::Impl::status_snapshot() {
    watchdog::StatusSnapshot s;
    s.run_id = config.run_id;
    s.host = config.hostname;
    s.node_rank = placement.group_rank;
    s.health_endpoint = published_health_endpoint();
    s.other_nodes = other_node_statuses();
    if (rounds) s.spares = rounds->spare_hosts();
    s.round = static_cast<std::uint64_t>(placement.round);
    s.restart_count = restarts_used(state);
    s.generation = state.generation;
    s.uptime_seconds = seconds_between(started_at, Clock::now());
    s.world_size = placement.world_size;
    s.nodes = placement.nodes;
    s.log_dir = logs.run_log_dir();
    s.last_failure = last_failure;
    s.hangs = watch->hangs;
    if (store.stats) s.store = store.stats();
    if (last_ready) {
        s.ready_attempt = last_ready->attempt;
        s.ready_line = ready_line(*last_ready);
        s.ready_seconds = last_ready->total_s;
        s.startup_phases = startup_phases(*last_ready);
    }
    s.phase = finished                            ? "finished"
              : state.stopping                    ? "stopping"
              : state.recovering                  ? "recovering"
              : state.alive > 0                   ? "running"
              : rounds && rounds->in_rendezvous() ? "rendezvous"
              : preload_loading                   ? "preloading"
                                                  : "waiting";
    const auto now = Clock::now();
    auto ranks = sample_progress();
    std::vector<watchdog::HungRank> hung;
    if (config.hang_timeout && !state.stopping) {
        hung = watchdog::judge_hangs(ranks, *config.hang_timeout, now, judging_since(now)).hung;
    }
    for (std::size_t lr = 0; lr < workers.size(); ++lr) {
        auto& w = workers[lr];  // usage_status() keeps the peak it reads
        const auto& r = ranks[lr];
        watchdog::WorkerStatus ws;
        ws.local_rank = w.end.local_rank;  // its LOCAL_RANK (the launcher's in per-rank mode)
        ws.rank = w.end.rank;
        ws.pid = w.end.pid;
        ws.progress_count = r.count;
        if (r.last_progress) ws.seconds_since_progress = seconds_between(*r.last_progress, now);
        ws.section = r.section;
        if (!w.alive && w.end.pid != 0) {
            ws.state = w.end.exit.succeeded() ? watchdog::WorkerState::Succeeded
                                              : watchdog::WorkerState::Failed;
            if (!w.end.exit.succeeded()) ws.detail = describe(w.end.exit);
        } else if (!w.alive) {
            ws.state = watchdog::WorkerState::Starting;
        } else if (w.stopped) {
            ws.state = watchdog::WorkerState::Stopped;
            ws.detail = "stopped by " + signal_name(w.stop_signal);
        } else if (!r.last_progress) {  // no beat yet (it may never beat: not judged then)
            ws.state = watchdog::WorkerState::Starting;
        } else {
            ws.state = watchdog::WorkerState::Running;
        }
        if (!r.record_problem.empty()) {
            ws.detail = "heartbeat record " + r.record_problem + ": its progress is unknown";
        }
        for (const auto& h : hung) {
            if (h.local_rank != static_cast<int>(lr)) continue;  // the detector's index
            ws.state = watchdog::WorkerState::Hung;
            ws.detail = watchdog::describe_hang(h, r, now);
        }
        usage_status(w, ws);
        s.workers.push_back(std::move(ws));
    }
    return s;
}

Agent::Impl::Worker* Agent::Impl::worker_of(pid_t pid) {
    const pid_t group = ::getpgid(pid);
    for (auto& w : workers) {
        if (w.alive && (w.end.pid == pid || w.end.pid == group)) return &w;
    }
    return nullptr;
}

void Agent::Impl::on_timer_request(const watchdog::TimerRequest& request) {
    auto* w = worker_of(request.pid);
    if (!w) {
        // A request names any pid: only ptrun's own workers (and their children) are signalled.
        if (watch->refused_pids.size() < 64 && watch->refused_pids.insert(request.pid).second) {
            log->warn(
                "torch file timer: ignoring scope '{}' for pid {}, which is not a worker of this "
                "ptrun (or a process in a worker's group)",
                request.scope_id, request.pid);
        }
        return;
    }
    const auto lr = static_cast<std::size_t>(w->slot);
    if (lr < watch->timer_requests.size()) {
        watch->timer_requests[lr] += 1;
        watch->timer_last[lr] = Clock::now();
    }
    if (watch->timers.apply(request) == watchdog::TimerUpdate::Refused) {
        log->warn("torch file timer: {} holds too many open scopes; '{}' is not timed", who(*w),
                  request.scope_id);
    }
    arm_timer_expiry();
}

void Agent::Impl::arm_timer_expiry() {
    auto next = watch->timers.next_expiration();
    if (!next) {
        watch->timer_expiry.cancel();
        return;
    }
    const double delay = std::max(0.0, *next - wall_now());
    watch->timer_expiry.expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::min(delay, 1e7))));
    watch->timer_expiry.async_wait([this](boost::system::error_code ec) {
        if (!ec && !finished) expire_timers();
    });
}

void Agent::Impl::expire_timers() {
    const double now = wall_now();
    for (const auto& expiry : watch->timers.take_expired(now)) {
        auto* w = worker_of(expiry.pid);
        if (!w) continue;
        const std::string late = fmt::format("{:.1f}", now - expiry.expiration_time);
        if (expiry.signal == 0) {
            log->warn("{}: its torch file timer '{}' expired {} s ago; it asked for no signal",
                      who(*w), expiry.scope, late);
            continue;
        }
        log->warn("{}: its torch file timer '{}' expired {} s ago: sending {}", who(*w),
                  expiry.scope, late, signal_name(expiry.signal));
        if (w->end.pid != expiry.pid) {  // a process of its group: as asked, at once
            ::kill(expiry.pid, expiry.signal);
            continue;
        }
        w->end.cause = "ended by its torch file timer: scope '" + expiry.scope + "' expired";
        honour_timer_with_stack(static_cast<std::size_t>(w - workers.data()), expiry.signal);
    }
    arm_timer_expiry();
}

void Agent::Impl::honour_timer_with_stack(std::size_t lr, int signo) {
    const pid_t pid = workers[lr].end.pid;
    if (!signal_python_stack(lr)) {
        ::kill(pid, signo);
        return;
    }
    // Where it was, first (at most 1 s): then the signal the timer asked for.
    const auto serial = watch->hang_serial;
    watch->timer_dumps.push_back(
        watchdog::DumpWait::start(io, {watch->stack_files[lr]}, {}, [this, lr, pid, signo, serial] {
            if (finished || watch->hang_serial != serial) return;
            auto& worker = workers[lr];
            if (worker.end.pid != pid || !worker.alive) return;
            worker.end.python_stack = runner_dump(lr);
            ::kill(pid, signo);
        }));
}

}  // namespace ptrun::launcher
