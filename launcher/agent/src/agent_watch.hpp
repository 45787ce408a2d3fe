#pragma once
/// Agent::Impl's watchdog state (agent_watchdog.cpp): heartbeat records, the one hang timer, the
/// hang being handled, the health endpoint and torch's file timer. Made only when --hang-timeout,
/// --health-port or TORCHELASTIC_ENABLE_FILE_TIMER=1 asks for it: without them the agent holds
/// a null pointer and its launch path does nothing more.

#include <sys/types.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ptrun/launcher/output/warning_limiter.hpp"
#include "ptrun/progress/heartbeat_file.hpp"
#include "ptrun/watchdog/dump_wait.hpp"
#include "ptrun/watchdog/hang_detector.hpp"
#include "ptrun/watchdog/health_server.hpp"
#include "ptrun/watchdog/stack_capture.hpp"
#include "ptrun/watchdog/timer_fifo.hpp"
#include "ptrun/watchdog/timer_table.hpp"

namespace ptrun::launcher {

struct Watch {
    explicit Watch(boost::asio::io_context& io) : hang_timer(io), timer_expiry(io) {}
    /// Removes the records, the FIFO and the private directory holding them.
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

    /// A hang found in the current attempt.
    struct Hang {
        watchdog::Clock::time_point at;
        watchdog::HangVerdict verdict;
        std::vector<watchdog::RankProgress> ranks;   ///< by local rank, at detection
        std::vector<watchdog::NativeStacks> native;  ///< by local rank order of `pids`
        std::vector<pid_t> pids;                     ///< the live ranks' pids captured
        std::string native_note;                     ///< why native stacks are missing
        /// The local rank the report names first and blames: the odd one out of the stacks
        /// (watchdog::odd_one_out), else the first to stop progressing; and why, "" for the latter.
        int culprit = 0;
        std::string culprit_why;
    };

    /// A private directory (ptrun-XXXXXX on /dev/shm, else $TMPDIR or /tmp) for the records and
    /// a FIFO ptrun chose; "" until needed.
    std::string dir;
    bool records_wanted = false;                   ///< --hang-timeout or --health-port
    std::vector<progress::HeartbeatFile> records;  ///< by local rank, this attempt's
    /// By local rank, this attempt's: the file the Python runner's faulthandler writes every
    /// thread's stack into on python_stack_signal(); empty without the runner.
    std::vector<std::string> stack_files;
    std::vector<std::uint64_t> timer_requests;  ///< by local rank: file-timer requests seen
    std::vector<std::optional<watchdog::Clock::time_point>> timer_last;  ///< the latest one
    boost::asio::steady_timer hang_timer;
    watchdog::Clock::time_point watching_since{};
    /// When the armed hang timer is due (`check_armed`): a fire, or a /status, much later than
    /// that means ptrun itself was not running.
    watchdog::Clock::time_point check_due{};
    bool check_armed = false;
    /// Whether ptrun has said what starts a worker's hang clock (once per run, at the first check
    /// that finds a live worker without any progress yet).
    bool clock_explained = false;
    /// Per local rank of this attempt: its damaged heartbeat record was reported.
    std::vector<bool> record_reported;
    std::optional<watchdog::StackTool> tool;
    std::optional<Hang> hang;
    std::shared_ptr<watchdog::StackCapture> capture;
    std::shared_ptr<watchdog::DumpWait> dump_wait;  ///< Python stack dumps being written
    /// GET /stacks: the dumps asked for on request, and the replies waiting for them.
    std::shared_ptr<watchdog::DumpWait> stacks_wait;
    std::vector<watchdog::HealthServer::StacksReply> stacks_replies;
    /// torch file-timer expiries waiting for the worker's Python stack before its signal.
    std::vector<std::shared_ptr<watchdog::DumpWait>> timer_dumps;
    std::uint64_t hang_serial = 0;  ///< which hang `capture` is for
    std::uint64_t hangs = 0;        ///< hangs declared in this run (/status, /metrics)
    std::unique_ptr<watchdog::HealthServer> health;
    std::unique_ptr<watchdog::TimerFifo> fifo;
    /// What a worker or a client can make ptrun warn about, at most one line per 5 s each: bad
    /// requests on the file-timer FIFO, and the health endpoint's errors.
    std::unique_ptr<WarningLimiter> fifo_warnings;
    std::unique_ptr<WarningLimiter> health_warnings;
    watchdog::TimerTable timers;
    boost::asio::steady_timer timer_expiry;
    std::string outcome;           ///< what ptrun does after this attempt, for the hang report
    std::set<pid_t> refused_pids;  ///< timer requests for pids not ptrun's own (said once each)
};

}  // namespace ptrun::launcher
