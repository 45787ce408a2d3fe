#include "ptrun/launcher/coordinator.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"

namespace ptrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

rdzv::TcpStoreClientOptions local_client(const HostPort& store) {
    rdzv::TcpStoreClientOptions o;
    o.host = store.host;
    o.port = store.port;
    o.connect_timeout = milliseconds(10'000);
    o.io_timeout = milliseconds(30'000);
    return o;
}

}  // namespace

struct Coordinator::Impl {
    explicit Impl(CoordinatorOptions options)
        : o(std::move(options)), core(o.policy), client(local_client(o.store)), thread([this] { loop(); }) {}

    ~Impl() {
        stopping = true;
        client.interrupt();
        thread.join();
    }

    CoordinatorOptions o;
    std::mutex mu;  ///< guards core
    std::condition_variable changed;
    CoordinatorCore core;
    rdzv::TcpStoreClient client;
    std::atomic<bool> stopping{false};
    std::thread thread;

    void loop() {
        auto next_beat = Clock::now() + o.heartbeat;
        while (!stopping) {
            try {
                auto wake = next_beat;
                {
                    std::lock_guard lock(mu);
                    if (auto d = core.deadline()) wake = std::min(wake, *d);
                }
                auto left = std::chrono::duration_cast<milliseconds>(wake - Clock::now());
                if (left > milliseconds(0)) pop_one(left);
                const auto now = Clock::now();
                run([&] { return core.on_tick(now); });
                if (now >= next_beat) {
                    read_beats(now);
                    next_beat = now + o.heartbeat;
                }
            } catch (const rdzv::ConnectionLost& e) {
                if (!stopping) o.logger->error("rendezvous coordinator lost its store: {}", e.what());
                return;
            } catch (const rdzv::StoreError& e) {
                if (!stopping) o.logger->warn("rendezvous coordinator: {}", e.what());
            }
        }
    }

    void pop_one(milliseconds timeout) {
        std::string text;
        try {
            text = client.queue_pop(o.keys.events(), timeout);
        } catch (const rdzv::StoreTimeout&) {
            return;
        }
        RdzvEvent event;
        try {
            event = decode_event(text);
        } catch (const std::runtime_error& e) {
            o.logger->warn("rendezvous: ignoring a malformed event ({})", e.what());
            return;
        }
        const auto now = Clock::now();
        run([&] { return core.on_event(event, now); });
    }

    void read_beats(Clock::time_point now) {
        std::vector<std::string> ids;
        {
            std::lock_guard lock(mu);
            ids = core.running_members();
        }
        if (ids.empty()) return;
        std::vector<std::string> keys;
        for (const auto& id : ids) keys.push_back(o.keys.heartbeat(id));
        std::map<std::string, std::int64_t> counters;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            // add(0) reads a counter without blocking on a key that is not there yet.
            counters[ids[i]] = client.add(keys[i], 0);
        }
        run([&] { return core.on_beats(counters, now); });
    }

    template <typename Step>
    void run(Step&& step) {
        std::vector<CoordinatorCommand> commands;
        {
            std::lock_guard lock(mu);
            commands = step();
        }
        for (const auto& c : commands) execute(c);
        changed.notify_all();
    }

    void execute(const CoordinatorCommand& command) {
        if (auto* p = std::get_if<PublishRound>(&command)) {
            if (o.clear_worker_keys) o.clear_worker_keys();
            const auto& a = p->assignment;
            client.set(o.keys.assignment(a.round), encode(a));
            std::vector<std::string> keys;
            std::vector<std::string> values;
            for (const auto& [id, seq] : p->admitted) {
                keys.push_back(o.keys.admit(id, seq));
                values.push_back(std::to_string(a.round));
            }
            client.multi_set(keys, values);
            o.logger->info("rendezvous round {} closed: {} node(s), world size {}, restart {}", a.round,
                           a.members.size(), a.world_size(), a.restart_count);
        } else if (auto* e = std::get_if<EndRound>(&command)) {
            client.set(o.keys.end(e->round), encode(e->end));
            if (e->end.reason != EndReason::Complete) {
                o.logger->info("rendezvous round {} ended ({}): {}", e->round, to_text(e->end.reason), e->end.message);
            }
        } else if (auto* r = std::get_if<RejectJoin>(&command)) {
            client.set(o.keys.admit(r->id, r->seq), "error:" + r->message);
        } else if (auto* s = std::get_if<PublishStatus>(&command)) {
            client.set(o.keys.status(), std::to_string(s->joined));
        }
    }
};

Coordinator::Coordinator(CoordinatorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Coordinator::~Coordinator() = default;

bool Coordinator::wait_drained(const std::string& self, std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->mu);
    return impl_->changed.wait_for(lock, timeout, [&] { return impl_->core.drained(self); });
}

}  // namespace ptrun::launcher
