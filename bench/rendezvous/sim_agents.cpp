#include "sim_agents.hpp"

#include <utility>
#include <cstdio>
#include <stdexcept>
#include <variant>

#include "ptrun/launcher/membership/admission.hpp"
#include "ptrun/launcher/membership/node_placement.hpp"
#include "ptrun/launcher/membership/rdzv_events.hpp"

namespace ptrun::bench {

SimAgents::SimAgents(EventLoop& loop, std::uint16_t port, launcher::RdzvKeys keys,
                     SimOptions options)
    : loop_(loop), keys_(std::move(keys)), options_(options) {
    if (options_.conns < 1 || options_.conns > 3)
        throw std::runtime_error("connections per agent must be 1, 2 or 3");
    const int count = options_.count;
    for (int g = options_.first; g < options_.first + count; ++g) {
        char host[32], id[64], addr[32];
        std::snprintf(host, sizeof host, "sim-node-%05d", g);
        std::snprintf(id, sizeof id, "%s:%d:%08x", host, 100000 + g,
                      0x9e3779b9u * static_cast<unsigned>(g + 1));
        std::snprintf(addr, sizeof addr, "10.%d.%d.%d", g >> 16, (g >> 8) & 255, g & 255);
        launcher::NodeInfo n;
        n.id = id;
        n.hostname = host;
        n.addr = addr;
        n.nproc = 8;
        n.max_restarts = options_.max_restarts;
        nodes_.push_back(std::move(n));
    }
    const auto n = static_cast<std::size_t>(count);
    seq_.assign(n, 0);
    silent_.assign(n, false);
    last_beat_.assign(n, Clock::time_point{});
    waiting_.resize(n);
    clock_busy_.assign(n, false);
    after_clock_.resize(n);
    join_ = loop_.connect(port, count, 256);
    watch_ = options_.conns == 3 ? loop_.connect(port, count, 256) : join_;
    if (options_.beats) beat_ = options_.conns == 1 ? join_ : loop_.connect(port, count, 256);
}

void SimAgents::wait_for(int i, Conn& c, const std::string& key, std::function<void()> stopped) {
    // A WAIT may be cancelled and sent again (a beat on a single connection, the join's progress
    // report), so STOP_WAITING may come twice (one raced a CANCEL_WAIT); the first one counts.
    const auto k = static_cast<std::size_t>(i);
    auto fired = std::make_shared<bool>(false);
    auto on_reply = [this, k, fired, stopped = std::move(stopped)](std::string_view v) {
        if (v[0] == kWaitCanceled || *fired) return;
        *fired = true;
        waiting_[k].reset();
        stopped();
    };
    waiting_[k] = Waiting{key, on_reply, &c, true};
    c.send(wait({key}), Reply::Wait, std::move(on_reply));
}

void SimAgents::progress(int i, int seq, Clock::duration every) {
    // RdzvSession::join_round: a join still waiting after kFirstProgress (1 s), then every
    // progress_every (5 s), cancels its WAIT, checks whether it is a spare, reads the joined
    // count (CHECK, then WAIT+GET of the status key) and waits again.
    const auto k = static_cast<std::size_t>(i);
    const std::string admit = keys_.admit(nodes_[k].id, seq);
    if (seq_[k] != seq || !waiting_[k] || waiting_[k]->key != admit) return;  // admitted
    loop_.at(Clock::now() + every, [=, this] { progress(i, seq, every); });
    if (!waiting_[k]->active) return;
    waiting_[k]->active = false;  // no beat may send anything behind a WAIT meanwhile
    ++progress_reports_;
    Conn& c = *waiting_[k]->conn;
    const std::string status = keys_.status();
    auto again = [this, k, &c, admit] {
        if (!waiting_[k] || waiting_[k]->key != admit) return;  // the admission came first
        waiting_[k]->active = true;
        c.send(wait({waiting_[k]->key}), Reply::Wait, waiting_[k]->on_reply);
    };
    c.send(cancel_wait(), Reply::Cancel, {});
    c.send(check({keys_.spare(nodes_[k].id, seq)}), Reply::U8, {});
    c.send(check({status}), Reply::U8, [&c, status, again](std::string_view ready) {
        if (ready[0] != 0) return again();
        c.send(wait({status}), Reply::Wait, {});
        c.send(bench::get(status), Reply::Bytes, [again](std::string_view) { again(); });
    });
}

void SimAgents::get(int i, Conn& c, const std::string& key,
                    std::function<void(std::string_view)> got) {
    // TcpStoreClient::get is WAIT then GET.
    wait_for(i, c, key,
             [&c, key, got = std::move(got)] { c.send(bench::get(key), Reply::Bytes, got); });
}

void SimAgents::sample_clock(int i, int left, std::function<void()> done) {
    if (left == 0) return done();
    get(i, *join_[static_cast<std::size_t>(i)], keys_.clock(),
        [=, this](std::string_view) { sample_clock(i, left - 1, done); });
}

void SimAgents::join(int i, OnAssigned done, std::function<void(int)> pushed) {
    const auto k = static_cast<std::size_t>(i);
    const int seq = ++seq_[k];
    Conn& c = *join_[k];
    const std::string admit = keys_.admit(nodes_[k].id, seq);
    auto push = [=, this, &c] {
        c.send(
            queue_push(keys_.events(),
                       launcher::encode(launcher::RdzvEvent{launcher::JoinEvent{nodes_[k], seq}})),
            Reply::None, {});
        if (pushed) pushed(i);
        if (options_.join_progress) {
            // RdzvSession: a first join's progress after 1 s, a later one's after 5 s.
            const auto first = std::chrono::seconds(seq == 1 ? 1 : 5);
            loop_.at(Clock::now() + first,
                     [=, this] { progress(i, seq, std::chrono::seconds(5)); });
        }
        get(i, c, admit, [=, this](std::string_view verdict) {
            // The verdict as RdzvSession reads it: a placement, or the coordinator's refusal.
            const auto admission = launcher::decode_admission(std::string(verdict));
            if (const auto* refused = std::get_if<launcher::AdmissionRefused>(&admission)) {
                throw std::runtime_error("agent " + std::to_string(i) +
                                         " refused: " + refused->message);
            }
            const int round = std::get<launcher::NodePlacement>(admission).round;
            const std::size_t bytes = verdict.size();
            // RdzvSession hands the placement on, then measures its clock offset: at the
            // first admission only.
            done(i, round, bytes);
            if (seq != 1 || options_.clock_samples == 0) return;
            clock_busy_[k] = true;
            sample_clock(i, options_.clock_samples, [this, k] {
                clock_busy_[k] = false;  // a watch asked for meanwhile starts now
                if (auto then = std::exchange(after_clock_[k], {})) then();
            });
        });
    };
    // RdzvSession: the first join makes sure the heartbeat counter exists; later ones find it.
    if (seq == 1) {
        c.send(add(keys_.heartbeat(nodes_[k].id), 1), Reply::I64,
               [push](std::string_view) { push(); });
    } else {
        push();
    }
}

void SimAgents::watch(int i, int round, OnEnd ended, std::function<void(int)> woke) {
    if (clock_busy_[static_cast<std::size_t>(i)]) {  // one WAIT at a time per agent here
        after_clock_[static_cast<std::size_t>(i)] = [=, this] { watch(i, round, ended, woke); };
        return;
    }
    Conn& c = *watch_[static_cast<std::size_t>(i)];
    const std::string key = keys_.end(round);
    wait_for(i, c, key, [=, &c] {
        if (woke) woke(i);
        c.send(bench::get(key), Reply::Bytes,
               [=](std::string_view text) { ended(i, launcher::decode_end(std::string(text))); });
    });
}

void SimAgents::beat(int i, Clock::duration interval) {
    const auto k = static_cast<std::size_t>(i);
    if (silent_[k]) return;
    last_beat_[k] = Clock::now();
    Conn& c = *beat_[k];
    if (options_.conns == 1 && waiting_[k] && waiting_[k]->active) {
        // The TCPStore wire has one request in flight per client: the wait steps aside.
        c.send(cancel_wait(), Reply::Cancel, {});
        c.send(add(keys_.heartbeat(nodes_[k].id), 1), Reply::I64, {});
        c.send(wait({waiting_[k]->key}), Reply::Wait, waiting_[k]->on_reply);
    } else {
        c.send(add(keys_.heartbeat(nodes_[k].id), 1), Reply::I64, {});
    }
    loop_.at(Clock::now() + interval, [this, i, interval] { beat(i, interval); });
}

void SimAgents::start_beats(Clock::duration interval) {
    if (beat_.empty()) throw std::logic_error("SimAgents built without beat connections");
    const auto start = Clock::now();
    for (int i = 0; i < size(); ++i) {
        loop_.at(start + interval * i / size(), [this, i, interval] { beat(i, interval); });
    }
}

Clock::time_point SimAgents::silence(int i) {
    silent_[static_cast<std::size_t>(i)] = true;
    return last_beat_[static_cast<std::size_t>(i)];
}

}  // namespace ptrun::bench
