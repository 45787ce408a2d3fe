// The start-up timeline (issue 26): the agent's own events, the workers' events from the events
// socket, the ready line once per attempt, and trace.json in the run directory.

#include <fcntl.h>
#include <unistd.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "agent_impl.hpp"
#include "ptrun/launcher/output/printable.hpp"
#include "ptrun/launcher/output/run_log.hpp"
#include "ptrun/launcher/timeline/chrome_trace.hpp"
#include "ptrun/launcher/timeline/ready_line.hpp"
#include "ptrun/progress/heartbeat_file.hpp"

namespace ptrun::launcher {

namespace asio = boost::asio;

void Agent::Impl::open_timeline() {
    timeline.node = config.hostname;
    timeline.group_rank = config.node_rank;
    add_event(timeline, {progress::monotonic_now_ns(), 0, -1, Phase::AgentStart, ""});
    try {
        worker_events.emplace(EventSocket::open());
    } catch (const std::system_error& e) {
        log->warn("no start-up timeline from the workers: {}", e.what());
        return;
    }
    // Its own descriptor for the loop, close-on-exec like the socket's: no worker or zygote
    // inherits it.
    const int fd = ::fcntl(worker_events->fd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        log->warn("no start-up timeline from the workers: the workers' events socket: {}",
                  std::strerror(errno));
        worker_events.reset();
        return;
    }
    worker_events_wait.emplace(io, fd);
    wait_worker_events();
    if (timeline_inbox) {
        timeline_inbox->on_change([this] { asio::post(io, [this] { check_job_ready(); }); });
    }
}

void Agent::Impl::pass_worker_events(SpawnRequest& request) const {
    if (!worker_events) return;
    request.events_fd = worker_events->sender();
    request.env[kEventsSocketEnv] = EventSocket::address(kEventsChildFd);
}

void Agent::Impl::record(Phase phase, int rank, std::string detail) {
    add_event(timeline,
              {progress::monotonic_now_ns(), state.restart_count, rank, phase, std::move(detail)});
    status_changed();  // each event of the timeline changes what /status says
}

void Agent::Impl::wait_worker_events() {
    worker_events_wait->async_wait(asio::posix::stream_descriptor::wait_read,
                                   [this](boost::system::error_code ec) {
                                       if (ec || finished) return;
                                       // A bounded batch per wake-up: a flood of datagrams cannot
                                       // starve the loop.
                                       for (int i = 0; i < 64; ++i) {
                                           auto got = worker_events->receive();
                                           if (!got) break;
                                           on_worker_event(*got);
                                       }
                                       wait_worker_events();
                                   });
}

void Agent::Impl::on_worker_event(const ReceivedEvent& got) {
    auto message = parse_worker_event(got.text);
    if (!message || got.pid <= 0) return;    // not a worker's event: ignored
    const pid_t group = ::getpgid(got.pid);  // -1 once the sender is gone
    for (auto& w : workers) {
        // The worker itself, even reaped already (its last datagram may come after its exit),
        // or a live process of its process group.
        if (w.end.pid <= 0 || (w.end.pid != got.pid && !(w.alive && w.end.pid == group))) continue;
        // The worker's clock is this node's; a time outside the attempt is taken as now.
        const std::uint64_t now = progress::monotonic_now_ns();
        std::uint64_t t = message->t_ns;
        if (t > now || t < attempt_started_ns) t = now;
        for (const auto& e : timeline.events)
            if (e.attempt == state.restart_count && e.rank == w.end.rank &&
                e.phase == message->phase)
                return;
        add_event(timeline, {t, state.restart_count, w.end.rank, message->phase, ""});
        sample_memory(w);  // its memory where it got to (imports done, process group, ...)
        if (message->phase == Phase::FirstProgress) check_ready();
        return;
    }
}

void Agent::Impl::check_ready() {
    if (ready_said_for == state.restart_count) return;
    auto b = ready_breakdown({timeline}, state.restart_count, progress::monotonic_now_ns());
    if (rounds) {
        // Several nodes: this node's ranks are ready; the store host says the job's line.
        if (b && b->missing.empty() && static_cast<std::size_t>(b->ranks) == workers.size()) {
            ready_said_for = state.restart_count;
            publish_timeline();
            check_job_ready();
        } else if (b && partial_published_for != state.restart_count) {
            // This node's first rank has stepped: the store host learns of its ranks now, so
            // that its deadline can name the ones that never step.
            partial_published_for = state.restart_count;
            publish_timeline();
            check_job_ready();
        }
        return;
    }
    if (!b || static_cast<std::size_t>(b->ranks) < workers.size()) return;
    if (b->missing.empty()) {
        ready_deadline.cancel();
        say_ready(*b);
        return;
    }
    if (ready_deadline_armed) return;
    // The first rank has stepped: the others get PTRUN_READY_DEADLINE to do the same.
    ready_deadline_armed = true;
    ready_deadline.expires_after(config.ready_deadline);
    ready_deadline.async_wait([this, attempt = state.restart_count](boost::system::error_code ec) {
        if (ec || finished || attempt != state.restart_count || ready_said_for == attempt) return;
        if (auto late = ready_breakdown({timeline}, attempt, progress::monotonic_now_ns()))
            say_ready(*late);
    });
}

void Agent::Impl::say_ready(const ReadyBreakdown& b) {
    ready_said_for = b.attempt;
    if (b.missing.empty()) {
        log->info("{}", ready_line(b));
        last_ready = b;
    } else
        log->warn("{}", ready_line(b));
    write_trace();
}

void Agent::Impl::timeline_attempt_started() {
    attempt_started_ns = progress::monotonic_now_ns();
    ready_deadline.cancel();
    ready_deadline_armed = false;
    record(Phase::AttemptStart, -1);
}

void Agent::Impl::publish_timeline() {
    if (!rounds) return;
    const auto offset = rounds->clock_offset();
    timeline.offset_ns = offset.offset_ns;
    timeline.offset_error_ns = offset.error_ns;
    timeline.group_rank = placement.group_rank;
    rounds->report(ReportKind::Timeline, encode(timeline));
}

std::vector<NodeTimeline> Agent::Impl::job_timelines() {
    std::vector<NodeTimeline> nodes{timeline};
    if (!timeline_inbox) return nodes;
    nodes.front().offset_ns = 0;  // the store host's clock is the job's
    for (auto& [id, report] : timeline_inbox->snapshot()) {
        if (id == self_id) continue;
        try {
            nodes.push_back(decode_node_timeline(report.text));
        } catch (const std::runtime_error& e) {
            if (!inbox_warned)
                log->warn("ignoring node {}'s start-up timeline: {}", printable(id), e.what());
            inbox_warned = true;
        }
    }
    return nodes;
}

void Agent::Impl::check_job_ready() {
    if (!timeline_inbox || finished || job_ready_said_for == state.restart_count) return;
    auto b = ready_breakdown(job_timelines(), state.restart_count, progress::monotonic_now_ns(),
                             placement.world_size);
    if (!b) return;
    if (b->missing.empty()) {
        ready_deadline.cancel();
        job_ready_said_for = b->attempt;
        log->info("{}", ready_line(*b));
        last_ready = b;
        write_trace();
        return;
    }
    const auto silent = std::count_if(b->missing.begin(), b->missing.end(),
                                      [](const MissingRank& m) { return !m.node.empty(); });
    if (ready_deadline_armed || silent == b->ranks) return;  // no rank has stepped yet
    // A rank of the job has stepped: the others, on every node, get PTRUN_READY_DEADLINE.
    ready_deadline_armed = true;
    ready_deadline.expires_after(config.ready_deadline);
    ready_deadline.async_wait([this, attempt = state.restart_count](boost::system::error_code ec) {
        if (ec || finished || attempt != state.restart_count || job_ready_said_for == attempt)
            return;
        auto late = ready_breakdown(job_timelines(), attempt, progress::monotonic_now_ns(),
                                    placement.world_size);
        if (!late) return;
        job_ready_said_for = attempt;
        log->warn("{}", ready_line(*late));
        write_trace();
    });
}

void Agent::Impl::write_trace() {
    const std::string dir = logs.run_log_dir();
    if (dir.empty() || timeline.events.empty()) return;
    const std::string path = dir + "/" + kTraceName;
    const std::string temporary = path + ".tmp";
    const auto failed = [&] {
        if (!trace_warned) log->warn("cannot write the start-up timeline {}", path);
        trace_warned = true;
        std::remove(temporary.c_str());
    };
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << chrome_trace(job_timelines(), progress::monotonic_now_ns());
        out.close();
        if (!out) return failed();
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) failed();
}

}  // namespace ptrun::launcher
