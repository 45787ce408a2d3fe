#include "sim_agents.hpp"

#include <cstdio>
#include <stdexcept>
#include <variant>

#include "ptrun/launcher/membership/admission.hpp"
#include "ptrun/launcher/membership/node_placement.hpp"
#include "ptrun/launcher/membership/rdzv_events.hpp"

namespace ptrun::bench {

SimAgents::SimAgents(EventLoop& loop, std::uint16_t port, launcher::RdzvKeys keys, int count,
                     int max_restarts, bool beats)
    : loop_(loop), keys_(std::move(keys)) {
    for (int i = 0; i < count; ++i) {
        char host[32], id[64], addr[32];
        std::snprintf(host, sizeof host, "sim-node-%05d", i);
        std::snprintf(id, sizeof id, "%s:%d:%08x", host, 100000 + i,
                      0x9e3779b9u * static_cast<unsigned>(i + 1));
        std::snprintf(addr, sizeof addr, "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
        launcher::NodeInfo n;
        n.id = id;
        n.hostname = host;
        n.addr = addr;
        n.nproc = 8;
        n.max_restarts = max_restarts;
        nodes_.push_back(std::move(n));
    }
    seq_.assign(static_cast<std::size_t>(count), 0);
    silent_.assign(static_cast<std::size_t>(count), false);
    last_beat_.assign(static_cast<std::size_t>(count), Clock::time_point{});
    control_ = loop_.connect(port, count, 256);
    if (beats) beat_ = loop_.connect(port, count, 256);
}

void SimAgents::get(Conn& c, const std::string& key, std::function<void(std::string_view)> got) {
    // TcpStoreClient::get is WAIT then GET.
    c.send(wait({key}), Reply::U8, [&c, key, got = std::move(got)](std::string_view) {
        c.send(bench::get(key), Reply::Bytes, got);
    });
}

void SimAgents::join(int i, OnAssigned done, std::function<void(int)> pushed) {
    const auto k = static_cast<std::size_t>(i);
    const int seq = ++seq_[k];
    Conn& c = *control_[k];
    const std::string admit = keys_.admit(nodes_[k].id, seq);
    c.send(add(keys_.heartbeat(nodes_[k].id), 1), Reply::I64, [=, this, &c](std::string_view) {
        c.send(
            queue_push(keys_.events(),
                       launcher::encode(launcher::RdzvEvent{launcher::JoinEvent{nodes_[k], seq}})),
            Reply::None, {});
        if (pushed) pushed(i);
        get(c, admit, [=](std::string_view verdict) {
            // The verdict as RdzvSession reads it: a placement, or the coordinator's refusal.
            const auto admission = launcher::decode_admission(std::string(verdict));
            if (const auto* refused = std::get_if<launcher::AdmissionRefused>(&admission)) {
                throw std::runtime_error("agent " + std::to_string(i) +
                                         " refused: " + refused->message);
            }
            done(i, std::get<launcher::NodePlacement>(admission).round, verdict.size());
        });
    });
}

void SimAgents::watch(int i, int round, OnEnd ended, std::function<void(int)> woke) {
    Conn& c = *control_[static_cast<std::size_t>(i)];
    const std::string key = keys_.end(round);
    c.send(wait({key}), Reply::U8, [=, this, &c](std::string_view) {
        if (woke) woke(i);
        c.send(bench::get(key), Reply::Bytes,
               [=](std::string_view text) { ended(i, launcher::decode_end(std::string(text))); });
    });
}

void SimAgents::beat(int i, Clock::duration interval) {
    const auto k = static_cast<std::size_t>(i);
    if (silent_[k]) return;
    last_beat_[k] = Clock::now();
    beat_[k]->send(add(keys_.heartbeat(nodes_[k].id), 1), Reply::I64, {});
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
