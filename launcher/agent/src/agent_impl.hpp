#pragma once
/// Agent::Impl: the agent's supervision of this node's workers: the attempt's workers, GroupState,
/// the restart policy, the root cause and the job's end, private to agent.cpp (signals, child
/// exits, decisions), agent_workers.cpp (starting an attempt), agent_terminal.cpp and
/// agent_watchdog.cpp. Multi-node rounds are RoundDriver's (agent_rounds.hpp), which owns the
/// membership and the running round; processes are the WorkerLauncher's.

#include <spdlog/spdlog.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent_rounds.hpp"
#include "agent_watch.hpp"
#include "ptrun/env/worker_env.hpp"
#include "ptrun/launcher/agent/agent.hpp"
#include "ptrun/launcher/agent/decide.hpp"
#include "ptrun/launcher/agent/generation_board.hpp"
#include "ptrun/launcher/membership/node_placement.hpp"
#include "ptrun/launcher/membership/round.hpp"
#include "ptrun/launcher/output/failure_report.hpp"
#include "ptrun/launcher/output/log_health.hpp"
#include "ptrun/launcher/output/log_layout.hpp"
#include "ptrun/launcher/output/output_relay.hpp"
#include "ptrun/launcher/output/usage_table.hpp"
#include "ptrun/launcher/process/spawn.hpp"
#include "ptrun/launcher/process/terminal.hpp"
#include "ptrun/launcher/process/worker_launcher.hpp"
#include "ptrun/launcher/process/zygote.hpp"
#include "ptrun/launcher/timeline/ready_line.hpp"
#include "ptrun/launcher/timeline/timeline_event.hpp"
#include "ptrun/launcher/timeline/worker_events.hpp"
#include "ptrun/sys/fd.hpp"
#include "ptrun/watchdog/log_followers.hpp"
#include "ptrun/watchdog/stack_summary.hpp"
#include "worker_store_relay.hpp"

namespace ptrun::launcher {

class Agent::Impl {
    /// A worker the zygote was asked to fork, until it answers: what starts it otherwise (its
    /// request, holding copies of its output fds, which `out` and `err` own).
    struct PendingFork {
        std::uint64_t ticket = 0;
        SpawnRequest request;
        sys::Fd out, err;
    };

    /// One worker of the current attempt.
    struct Worker {
        /// Its index here (workers[slot], local.workers[slot]); its LOCAL_RANK, end.local_rank,
        /// is the launcher's in one-task-per-rank mode.
        int slot = 0;
        WorkerEnd end;
        bool alive = false;
        std::vector<std::string> direct_logs;  ///< log files the worker writes itself (--redirects)
        bool stopped = false;  ///< stopped by a signal (waitpid WUNTRACED) and not continued since
        std::chrono::steady_clock::time_point stopped_at{};  ///< when it was last stopped
        int stop_signal = 0;                                 ///< by which signal
        std::chrono::steady_clock::time_point exited_at{};   ///< when it was reaped
        std::chrono::steady_clock::time_point started_at{};  ///< when it started (pid known)
        bool counted = false;         ///< its run is in `used` (agent_usage.cpp)
        std::uint64_t peak_seen = 0;  ///< the largest peak read while it ran (sample_memory)
        double cpu_seen = 0;          ///< its CPU seconds when last read while it ran
        /// Asked of the zygote, not forked yet: alive, with no pid (nothing to signal).
        std::shared_ptr<PendingFork> fork;
        /// Its relays waiting for its pid (a prefix template's ${pid}), owned by `relays`, and
        /// whether each prefixes console lines (tee'd) or only filtered ones.
        std::vector<std::pair<OutputRelay*, bool>> held_relays;
    };

    /// The child's end of one output stream, and what the agent keeps of it.
    /// Where one worker stream goes (--tee, --redirects, --local-ranks-filter, the filters).
    struct StreamRoute {
        bool tee = false;       ///< to the console too, through a relay
        bool to_file = false;   ///< to a log file
        bool filtered = false;  ///< --duplicate-*-filters read it, through a relay
    };
    struct StreamPlumbing {
        int child_fd = -1;  ///< -1: inherit ptrun's stream
        std::string log_path;
        bool direct = false;  ///< the worker writes log_path itself
    };

  public:
    /// The job ended on --checkpoint-signal (Agent::checkpointed).
    bool checkpointed() const { return state.checkpoint_signal != 0; }
    /// When the workers were sent the checkpoint signal (Agent::checkpoint_started).
    std::chrono::steady_clock::time_point checkpoint_started() const { return checkpoint_sent; }

    Impl(const LaunchConfig& c, WorkerCommand cmd, LocalPlacement lp, env::EnvMap e,
         StoreEndpoint s, std::shared_ptr<spdlog::logger> l, std::optional<Membership> m,
         std::unique_ptr<WorkerLauncher> wl, std::shared_ptr<Console> out)
        : config(c),
          command(std::move(cmd)),
          local(std::move(lp)),
          parent_env(std::move(e)),
          store(std::move(s)),
          log(std::move(l)),
          signals(io),
          grace(io),
          checkpoint_grace(io),
          straggler(io),
          launcher(std::move(wl)),
          logs(c.log_dir, c.run_id, c.hostname, env::lookup(parent_env, "TMPDIR").value_or(""),
               c.nproc_per_node),
          log_health(log),
          ready_deadline(io),
          status_publish(io) {
        policy.max_restarts = c.max_restarts;
        policy.replace_failed = c.restart_policy == RestartPolicyKind::Failed;
        if (m) {
            timeline_inbox = m->timelines;
            status_inbox = m->statuses;
            self_id = m->self_id;
            self_addr = m->self_addr;
            rounds.emplace(
                std::move(*m), c, io, log,
                RoundDriver::Hooks{
                    .start = [this](const NodePlacement& p) { start_round(p); },
                    .ended = [this](const RoundEnded& end) { apply(end); },
                    .failed = [this](int code) { finish(code); },
                    .alive = [this] { return state.alive; },
                    .changed =
                        [this](const std::string& why) { record(Phase::NodeChange, -1, why); },
                });
        }
        state.distributed = rounds.has_value();
        placement.group_rank = c.node_rank;
        placement.nodes = 1;
        // One node: it is node rank 0 (resolve refuses another) and holds every rank. A job of
        // several nodes takes rank_base and world_size from each round (start_round).
        placement.rank_base = 0;
        placement.world_size = c.nproc_per_node;
        placement.master_addr = store.host;
        placement.master_port = store.port;
        console = std::move(out);
    }

    /// Unhooks the store host's timeline inbox: no callback reaches `io` once it is gone.
    ~Impl() {
        if (timeline_inbox) timeline_inbox->on_change(nullptr);
    }
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    /// Runs the agent to the end (signals, child exits and round events on `io`); the exit code.
    int run();
    /// Agent::serve_health_on.
    void serve_health_on(sys::Fd listener) { health_listener = std::move(listener); }
    /// Agent::watch_launcher_pipe.
    void watch_launcher_pipe(sys::Fd pipe) { launcher_pipe_fd = std::move(pipe); }
    /// Starts RUN_DIR/ptrun.log (what ptrun said so far first) once the run directory exists
    /// (with --log-dir from the start, else with the first log file); says so when it cannot.
    void open_run_log();
    /// False when no run directory can come in this run, so no run log either: no --log-dir,
    /// no log file for any local rank, no filters, no watchdog.
    bool may_open_run_log() const;

  private:
    const LaunchConfig& config;
    WorkerCommand command;
    LocalPlacement local;  ///< each local worker's devices and binding
    /// ptrun's own CPU set, read on the first --report-bindings line of an unbound worker.
    std::optional<placement::IdSet> inherited_cpus;
    env::EnvMap parent_env;
    StoreEndpoint store;
    /// --store-relay: this node's relay to the workers' store (made with the first worker).
    std::unique_ptr<WorkerStoreRelay> store_relay;
    std::shared_ptr<spdlog::logger> log;
    NodePlacement placement;  ///< this node's place in the job for the current attempt
    boost::asio::io_context io{1};
    /// `ptrun logs --follow`'s long-polls on this node's /logs (agent_logs.cpp).
    watchdog::LogFollowers followers{io};
    /// Each rank's log files on this node, one set per worker that ran it (an attempt, a
    /// replacement), oldest first: "" for a stream kept in no file. /logs reads them by index.
    struct RankLogFiles {
        std::string out, err;
    };
    std::map<int, std::vector<RankLogFiles>> rank_log_files;
    /// Multi-node: the rounds this node goes through (agent_rounds.cpp); empty on one node.
    std::optional<RoundDriver> rounds;
    boost::asio::signal_set signals;
    boost::asio::steady_timer grace;
    /// --checkpoint-grace: how long the workers have to exit on the checkpoint signal.
    boost::asio::steady_timer checkpoint_grace;
    /// When the workers were sent the checkpoint signal (Agent::checkpoint_started).
    std::chrono::steady_clock::time_point checkpoint_sent{};
    /// Says which workers a half-finished group still waits on.
    boost::asio::steady_timer straggler;
    /// When a worker of this attempt first exited 0.
    std::chrono::steady_clock::time_point first_success;
    /// Starts, signals and reaps the workers (containment included); destroyed after `logs`.
    std::unique_ptr<WorkerLauncher> launcher;
    LogLayout logs;
    LogHealth log_health;
    std::shared_ptr<Console> console;  ///< ptrun's stdout/stderr, never blocking
    GroupState state;
    RestartPolicy policy;
    std::vector<Worker> workers;
    std::vector<std::unique_ptr<OutputRelay>> relays;
    /// This attempt's filtered_stdout.log / filtered_stderr.log, opened with the first relay.
    std::shared_ptr<SharedLog> filtered_logs[2];
    TerminalLender terminal;         ///< lent to a worker that reads it (agent_terminal.cpp)
    std::deque<int> terminal_queue;  ///< local ranks stopped on terminal I/O, waiting for it
    std::optional<WorkerEnd> root_cause;
    /// The run's last failure, for /status: failure_line() of its root cause and its UTC time.
    std::string last_failure;
    /// When this agent started (/status uptime).
    const std::chrono::steady_clock::time_point started_at = std::chrono::steady_clock::now();
    /// When the last Ctrl-C (SIGINT) was counted: copies arriving within kSameInterrupt of it
    /// are the same Ctrl-C (a terminal and a relaying wrapper such as `timeout` both send it).
    std::optional<std::chrono::steady_clock::time_point> last_interrupt;
    /// The watchdog (agent_watchdog.cpp); null unless --hang-timeout, --health-port or torch's
    /// file timer asks for it.
    std::unique_ptr<Watch> watch;
    /// --restart-policy failed: the generation keys, from the first replacement on.
    std::unique_ptr<GenerationBoard> generations;
    /// When the running recovery's failure was seen (its replacement asked for).
    std::chrono::steady_clock::time_point recovery_started{};
    /// The failure the running recovery began from: what a fallback to a group restart reports.
    std::optional<WorkerEnd> recovery_cause;
    /// The global ranks replaced in the running recovery's generation.
    std::vector<int> recovery_replaced;
    /// Why the running recovery falls back to a group restart (said once, by apply()).
    std::string recovery_why;
    /// The --health-port's socket when EarlyHealth served it before run() (else it is opened).
    sys::Fd health_listener;
    /// --preload: the node's zygote (agent_preload.cpp); kept once unusable (it forks nothing).
    std::unique_ptr<Zygote> zygote;
    bool preload_loading = false;  ///< the zygote imports: the first attempt waits for it
    bool start_waits = false;      ///< an attempt is due once the zygote is ready or unusable
    /// The start-up timeline (agent_timeline.cpp): this node's events, the workers' events
    /// socket (empty when it cannot be made: said once) and the ready line's state.
    NodeTimeline timeline;
    std::optional<EventSocket> worker_events;
    std::optional<boost::asio::posix::stream_descriptor> worker_events_wait;
    boost::asio::steady_timer ready_deadline;
    bool ready_deadline_armed = false;
    int ready_said_for = -1;      ///< the attempt whose ready line was said (multi-node: reported)
    int job_ready_said_for = -1;  ///< on the store host: the attempt whose job-wide line was said
    int partial_published_for = -1;  ///< the attempt whose first progress was published
    std::optional<ReadyBreakdown>
        last_ready;  ///< the latest complete one, for /status and /metrics
    /// On the store host of a multi-node job: the other members' timelines (their reports), and
    /// this node's rendezvous id (its own report is skipped: its timeline is `timeline`).
    NodeReportInbox* timeline_inbox = nullptr;
    /// On the store host of a multi-node job: the other members' statuses (agent_status.cpp).
    NodeReportInbox* status_inbox = nullptr;
    /// A member with --health-port publishes its status to the store host: soon after each
    /// change, and every kStatusRefresh while nothing changes (progress counts move on).
    boost::asio::steady_timer status_publish;
    std::optional<std::chrono::steady_clock::time_point> status_publish_due;
    std::string self_id;
    /// Multi-node: this node's address as the rendezvous knows it ("" on one node).
    std::string self_addr;
    bool inbox_warned = false;
    std::uint64_t attempt_started_ns = 0;
    bool trace_warned = false;
    bool finished = false;
    /// The hosted store's listening socket (a copy), watched until its first connection starts
    /// the store's thread (StoreEndpoint::start).
    std::optional<boost::asio::posix::stream_descriptor> store_listener;
    void start_store_at_first_connection();
    /// --from-launcher: the launching ptrun's pipe (stdin), watched on `io` once run() starts.
    sys::Fd launcher_pipe_fd;
    std::optional<boost::asio::posix::stream_descriptor> launcher_pipe;
    /// Watches `launcher_pipe` (agent_launcher_pipe.cpp): its end stops the job.
    void watch_launcher();
    bool announced_logs = false;
    bool run_log_opened = false;
    int exit_code = 0;

    /// SIGUSR1/SIGUSR2 are forwarded to the workers; every other handled signal stops the job.
    static bool stops_job(int signo) { return signo != SIGUSR1 && signo != SIGUSR2; }
    /// A person's second Ctrl-C comes later than this after the first; copies of one come sooner.
    static constexpr std::chrono::milliseconds kSameInterrupt{100};
    /// True for a SIGINT that is a copy of the one counted less than kSameInterrupt ago; else
    /// counts this one (the time) and returns false.
    bool copy_of_last_interrupt();

    // supervision (agent.cpp)
    /// Waits for the next signal (SIGCONT: lend the terminal; others: stop or forward).
    void wait_signal();
    /// What receiving `signo` does now, said to the person who sent it (the grace, Ctrl-C twice).
    std::string signal_notice(int signo) const;

    // --checkpoint-signal (agent_checkpoint.cpp)
    /// The event for receiving `signo`: a checkpoint request when --checkpoint-signal makes it one.
    SignalReceived signal_event(int signo) const;
    /// What receiving `signo` starts as a checkpoint, or "" when it starts none now.
    std::string checkpoint_notice(int signo) const;
    /// Sends `signo` to every worker (not as ptrun's stop) and arms --checkpoint-grace.
    void start_checkpoint(int signo);
    /// At the job's end after a checkpoint: which ranks exited in time, which were stopped.
    void report_checkpoint();
    /// A worker exited, stopped or was continued (the launcher says): exits feed decide().
    void on_child(const ChildChange& change);
    /// Feeds `ev` to decide() and carries out the action.
    void apply(const Event& ev);
    /// Carries out one action of the decision table.
    void act(const Action& a);
    /// Sends `signo` to every live worker's process group.
    void signal_alive(int signo, bool by_ptrun);
    /// Logs the failure that triggers a restart.
    void announce_restart();
    /// A worker exited 0 while others run: arms the notice of who is still running (after
    /// PTRUN_STRAGGLER_NOTICE seconds, default 300, then after twice as long each time).
    void watch_stragglers();
    /// Logs "2/3 workers exited 0; still waiting on rank 0 (pid N) for 5 min".
    void announce_stragglers(std::chrono::seconds next);
    /// Kills what is left in the attempt's process groups and flushes its output.
    void end_attempt();
    /// Ends the run with `code`: stops what is left, reports the root cause, stops the loop.
    void finish(int code);

    // the watchdog (agent_watchdog.cpp)
    /// Makes `watch` when an option asks for it: the health endpoint, torch's file timer FIFO.
    /// False (said) when one cannot be made.
    bool open_watch();
    /// Before spawning: each worker's heartbeat record and environment (PTRUN_HEARTBEAT_FILE,
    /// the runner's PTRUN_STACK_FILE and PTRUN_STACK_SIGNAL, else PYTHONFAULTHANDLER,
    /// TORCHELASTIC_TIMER_FILE) and ptrace permission. Throws EnvironmentError.
    void watch_attempt(std::vector<SpawnRequest>& requests);
    /// Local rank `lr`'s heartbeat record, stack file and environment for `request` (a
    /// replacement's replace its predecessor's). Throws EnvironmentError.
    void watch_worker(std::size_t lr, SpawnRequest& request);
    /// Creates (empty) one worker's Python stack file. Throws EnvironmentError.
    void create_stack_file(const std::string& path);
    /// Removes the last attempt's Python stack files.
    void remove_stack_files();
    /// On a hang, once the Python stacks are in: the native stacks of the live workers, then
    /// hang_captured().
    void capture_native();
    /// GET /stacks: asks every live Python worker (through the runner) for its stacks and
    /// replies with all of them once written (at most 1 s); the workers go on.
    void request_stacks(watchdog::HealthServer::StacksReply reply);
    /// GET /logs?QUERY: the lines one of this node's ranks wrote to its log files, or a
    /// --follow long-poll (agent_logs.cpp); `reply` is called once, maybe later.
    void answer_logs(const std::string& query, watchdog::HealthServer::StacksReply reply);
    /// The lines answer of a rank's /logs query.
    std::pair<int, std::string> answer_rank_logs(const std::string& query);
    /// Notes the log files worker `w` was given (rank_log_files), and has the followers watch
    /// those it writes itself.
    void note_log_files(const Worker& w, const StreamPlumbing& out, const StreamPlumbing& err);
    /// Where other hosts reach this node's health endpoint ("ADDR:PORT"), "" without one.
    std::string published_health_endpoint() const;
    /// Stops the loop: at once, or kFollowerLinger later when a --follow asked (its last reads).
    void stop_loop();
    /// Sends the stack signal to local rank `lr` if it is alive and catches it, its stack file
    /// emptied first; true when sent.
    bool signal_python_stack(std::size_t lr);
    /// Sends the stack signal to each live worker that catches it (signal_python_stack);
    /// returns the files to wait for.
    std::vector<std::string> signal_python_stacks();
    /// Local rank `lr`'s stack file as the runner wrote it, without the runner's own frames
    /// (its last 4000 bytes); "" without one.
    std::string runner_dump(std::size_t lr) const;
    /// A torch file timer of local rank `lr` expired asking for `signo`: through the runner, its
    /// Python stack is read first (at most 1 s, kept for the failure report), then `signo` sent.
    void honour_timer_with_stack(std::size_t lr, int signo);
    /// What was captured of local rank `lr` for the hang: native stacks and the Python ones
    /// (the runner's stack file, else, without the runner, its stderr log); nullopt when it had
    /// exited before the hang. Sets `python_terminal` when its tracebacks went to the terminal.
    std::optional<watchdog::RankStacks> captured_stacks(const Watch::Hang& hang, std::size_t lr,
                                                        bool& python_terminal) const;
    /// Once per run, when a live worker has no progress yet at a hang check: says what starts
    /// its hang clock (a worker is judged only from its first beat).
    void explain_hang_clock(const std::vector<watchdog::RankProgress>& ranks);
    /// Makes the watchdog's directory and torch's file-timer FIFO again when a worker removed
    /// them (rm -rf /dev/shm/ptrun-*), saying so. Throws EnvironmentError.
    void restore_watch_files();
    /// (Re)opens torch's file-timer FIFO at `path`. Throws watchdog::TimerFifoError.
    void open_timer_fifo(const std::string& path);
    /// After spawning: arms the hang check.
    void watch_started();
    /// Re-arms the one hang timer for `at`.
    void arm_hang_check(std::chrono::steady_clock::time_point at);
    /// The hang timer fired: judges every local rank; a hang starts the evidence capture.
    void check_hangs();
    /// Every local rank's progress now (records, timer requests, stops, exits).
    std::vector<watchdog::RankProgress> sample_progress() const;
    /// Where hang durations start at `now`: `watch->watching_since`, or `now` itself when the
    /// armed hang timer is more than a second overdue (ptrun was not running: that time never
    /// counts). Outside an armed timer (a hang being handled, between attempts) never `now`.
    std::chrono::steady_clock::time_point judging_since(
        std::chrono::steady_clock::time_point now) const;
    /// Warns once per worker and attempt that its heartbeat record is damaged.
    void report_damaged_records(const std::vector<watchdog::RankProgress>& ranks);
    /// A hang was found: says so and captures every live rank's native stacks.
    void on_hang(watchdog::HangVerdict verdict, std::vector<watchdog::RankProgress> ranks);
    /// The native stacks are in: the hang becomes decide()'s event.
    void hang_captured(std::vector<watchdog::NativeStacks> native);
    /// The attempt ended (its output drained): with a hang, reads the Python tracebacks, writes
    /// every rank's stacks to the log directory and prints the report; drops the records.
    void end_watch_attempt();
    /// The /health and /status snapshot (on the store host: with the other nodes' statuses);
    /// reads what each running worker uses now (a memory sample for trace.json).
    watchdog::StatusSnapshot status_snapshot();

    // job-wide status (agent_status.cpp)
    /// This node's workers or phase changed: a member publishing its status does so soon.
    void status_changed();
    /// Publishes this node's status to the store host now (a member with --health-port only),
    /// then again after kStatusRefresh unless the agent has finished.
    void publish_status();
    /// Arms the publish timer for `delay` from now, unless it is due sooner already.
    void schedule_status(std::chrono::milliseconds delay);
    /// On the store host: the statuses the other nodes of the current round published, by node
    /// rank (unreadable ones left out).
    std::vector<watchdog::NodeStatus> other_node_statuses() const;
    /// torch's file timer: one request from the FIFO.
    void on_timer_request(const watchdog::TimerRequest& request);
    /// Arms the file-timer expiry for the earliest timer held.
    void arm_timer_expiry();
    /// Signals the workers whose timers expired.
    void expire_timers();
    /// The live worker `pid` is, or whose process group it is in; nullptr when none.
    Worker* worker_of(pid_t pid);

    // the terminal (agent_terminal.cpp)
    /// A worker was stopped by `signo`: SIGTTIN/SIGTTOU lend it the terminal (or queue it),
    /// Ctrl-Z (SIGTSTP) on the holder takes the terminal back; any stop is said at once.
    void on_stopped(Worker& w, int signo);
    /// Lends the terminal to the first live worker waiting for it, if ptrun holds it.
    void lend_terminal();
    /// Worker `w` exited: takes the terminal back if it held it. Returns whether it did.
    bool reclaim_terminal(const Worker& w);
    /// A worker gave the terminal back: the hang clock, paused meanwhile, restarts now.
    void terminal_returned();
    /// "worker rank R (local rank L, pid P)".
    static std::string who(const Worker& w);

    // recovery in place (agent_recovery.cpp)
    /// --restart-policy failed: starts local rank `lr` again alone (its predecessor has exited)
    /// in the new generation, whose keys go to the workers' store; when they cannot, or the
    /// replacement cannot start, the recovery falls back to a group restart.
    void replace_worker(int lr);
    /// Begins the job's next generation replacing global `ranks` on the workers' store (the
    /// board made on first use); its end reaches generation_ended on the loop. Returns its
    /// number. Throws rdzv::StoreError.
    int begin_generation(const std::vector<int>& ranks);
    /// This node takes a lost member's place in the running round (placement.replacement): its
    /// ranks begin a new generation, which its workers start in; false (the round told of the
    /// failure) when the generation's keys cannot be written.
    bool take_lost_place();
    /// The workers of generation `generation` all joined it (`joined`), or the wait ended.
    void generation_ended(int generation, bool joined);

    /// Multi-node: a round closed with this node in it: its placement, then the workers.
    void start_round(const NodePlacement& a);

    // the start-up timeline (agent_timeline.cpp)
    /// Records ptrun's start and opens the workers' events channel (a warning when it cannot).
    void open_timeline();
    /// Gives `request`'s process the sending end of the workers' events channel (at
    /// kEventsChildFd, named in PTRUN_EVENTS_SOCKET), when there is one.
    void pass_worker_events(SpawnRequest& request) const;
    /// Records `phase` of the current attempt now (`rank` -1: the node's own event).
    void record(Phase phase, int rank, std::string detail = "");
    /// Reads the events socket whenever a datagram waits.
    void wait_worker_events();
    /// One datagram: recorded when its sender is a live worker (or in its process group).
    void on_worker_event(const ReceivedEvent& got);
    /// After a first progress: the ready line once every rank made one, or kReadyDeadline after
    /// the first did (PTRUN_READY_DEADLINE, default 120 s), naming who is missing.
    void check_ready();
    /// Says the ready line (missing ranks: a warning) and writes trace.json.
    void say_ready(const ReadyBreakdown& breakdown);
    /// Before an attempt's workers start: its start event; the ready line's state reset.
    void timeline_attempt_started();
    /// RUN_DIR/trace.json (Chrome trace), written whole then renamed; a warning once when not.
    void write_trace();
    /// Multi-node: sends this node's timeline (with its clock offset) to the store host.
    void publish_timeline();
    /// Every node's timeline this agent knows: its own, and on the store host the members'
    /// reports (a malformed one is said once and left out).
    std::vector<NodeTimeline> job_timelines();
    /// On the store host: the job-wide ready line once every rank of the attempt on every node
    /// has made its first progress.
    void check_job_ready();

    // preload (agent_preload.cpp)
    /// --preload: starts the node's zygote, which imports the modules while the rendezvous runs;
    /// says why when it is not used (SLURM per-rank mode, or it cannot start).
    void start_preload();
    /// The zygote is ready or unusable: the attempt that waited for it starts.
    void preload_settled();
    /// The modules of --preload, comma-separated.
    std::string preload_list() const;

    // what each worker used (agent_usage.cpp)
    /// Each local slot's use over every attempt on this node, for the end table.
    std::vector<RankUse> used;
    /// `w` started now (its pid is known): one more run of its slot.
    void usage_started(Worker& w);
    /// `w`'s run is over (`ended`: the table's cell): its wall time, CPU time and peak added.
    void usage_ended(Worker& w, const std::string& ended);
    /// Reads what `w` uses now, if it runs, and records its memory on trace.json's tracks.
    std::optional<LiveUsage> sample_memory(Worker& w);
    /// `ws`'s figures of what `w`'s rank used so far: `used`, plus the running worker read now.
    void usage_status(Worker& w, watchdog::WorkerStatus& ws);
    /// At the end of the run: the table of what each worker used, as info lines (the console unless
    /// LOGLEVEL is above info, and ptrun.log).
    void say_usage_table();

    // workers (agent_workers.cpp)
    /// Spawns this node's workers for the current attempt and placement; when their files or
    /// pipes cannot be made (EnvironmentError), starts none, says why and finishes with 1.
    void start_attempt();
    /// Begins the attempt's directories, makes every worker's error-file directory and sets
    /// every Worker's identity, before any worker is spawned; local rank i's is the i-th.
    /// Throws EnvironmentError.
    std::vector<env::WorkerIdentity> identify_workers();
    /// Sets local rank `lr`'s Worker identity for the running attempt and generation, its error
    /// files in `error_dir`, and returns it.
    env::WorkerIdentity worker_identity(int lr, const std::string& error_dir);
    /// Local rank `lr`'s spawn request (its environment from `id`).
    SpawnRequest worker_request(int lr, const env::WorkerIdentity& id);
    /// Opens local rank `lr`'s log files and pipes and spawns it (a failed exec is its exit 127).
    /// Throws EnvironmentError naming the local rank when the system refuses the process.
    void spawn(int lr, SpawnRequest& request);
    /// Asks the zygote for local rank `lr` (its answer: forked()); false when it forks nothing
    /// (the caller starts the worker itself).
    bool fork_from_zygote(int lr, SpawnRequest& request);
    /// The zygote's answer for local rank `lr`: its pid, or -1 (it forked nothing: started here).
    void forked(int lr, pid_t pid);
    /// Starts local rank `lr` with `request` (already counted alive; `how`: for the timeline).
    void launch_worker(int lr, SpawnRequest& request, const char* how);
    /// `w`'s request to the zygote, if any, is cancelled: its answer never reaches the agent.
    void cancel_fork(Worker& w);
    /// Local rank `lr`, asked of the zygote, will not run: the request is dropped, and it ends as
    /// stopped by ptrun with `signo` (a stop of the attempt before the zygote answered).
    void drop_fork(int lr, int signo);
    /// Where local rank `local_rank`'s `stream` goes.
    StreamRoute route_of(StdMask stream, int local_rank) const;
    /// The descriptors ptrun keeps open for one worker's output while it runs (relay pipes and
    /// their log files), as plumb() will open them.
    int fds_kept(int local_rank) const;
    /// Throws EnvironmentError (too many open files, with the numbers) when the attempt's workers
    /// would need more descriptors than RLIMIT_NOFILE leaves: refused before any of them starts.
    void check_open_files_for_attempt() const;
    /// The child end of one output stream per the redirect/tee settings (file, tee pipe or
    /// inherit).
    StreamPlumbing plumb(StdMask stream, int local_rank, int console_fd);
    /// The prefix of `w`'s tee'd and filtered lines: --log-line-prefix-template's, with its pid
    /// once known, else "[host:rank] ".
    std::string line_prefix(const Worker& w) const;
    /// `w` runs (its pid known) or will not: its held relays start with their full prefix.
    void release_output(Worker& w);
    /// This attempt's filtered_stdout.log or filtered_stderr.log, opened on first use.
    std::shared_ptr<SharedLog> filtered_log(StdMask stream);
    /// --report-bindings: the line for local rank `lr`, just spawned with `request`.
    void report_binding(int lr, const SpawnRequest& request);
    /// Logs the run's log directory once.
    void announce_logs();
};

}  // namespace ptrun::launcher
