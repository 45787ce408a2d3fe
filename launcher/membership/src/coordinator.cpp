#include "ptrun/launcher/membership/coordinator.hpp"

#include <spdlog/spdlog.h>
#include <sys/random.h>

#include <utility>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "ptrun/launcher/membership/admission.hpp"
#include "ptrun/launcher/membership/node_placement.hpp"
#include "ptrun/launcher/membership/rdzv_reject_log.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kConnectTimeout{10'000};
constexpr milliseconds kIoTimeout{30'000};

/// The longest pause before the next call after a lost connection (a store that fails at once
/// must not spin the loop); the TCP client spends up to kConnectTimeout reconnecting besides.
constexpr milliseconds kLostPause{1'000};

std::unique_ptr<rdzv::Store> connect(const CoordinatorOptions& o) {
    if (o.connect) return o.connect(kIoTimeout);
    return tcp_store_connector(o.store, kConnectTimeout)(kIoTimeout);
}

/// How long the heartbeat read waits for a member's counter to exist before reading one by one.
constexpr milliseconds kBeatReadWait{1'000};

/// Events popped and handled at once, at most.
constexpr std::size_t kMaxEventBatch = 1'024;

/// `commands` with only the last PublishStatus (the progress count) of a batch kept.
std::vector<CoordinatorCommand> without_stale_status(std::vector<CoordinatorCommand> commands) {
    auto last = std::find_if(commands.rbegin(), commands.rend(), [](const CoordinatorCommand& c) {
        return std::holds_alternative<PublishStatus>(c);
    });
    if (last == commands.rend()) return commands;
    const auto keep = std::prev(last.base());
    std::vector<CoordinatorCommand> out;
    out.reserve(commands.size());
    for (auto it = commands.begin(); it != commands.end(); ++it) {
        if (it == keep || !std::holds_alternative<PublishStatus>(*it))
            out.push_back(std::move(*it));
    }
    return out;
}

/// A fresh random round token (16 hex digits).
std::string random_token() {
    std::uint64_t bits = 0;
    if (::getrandom(&bits, sizeof bits, 0) != static_cast<ssize_t>(sizeof bits)) {
        bits = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    }
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
    return text;
}

std::optional<std::int64_t> counter_value(const std::string& text) {
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return n;
}

}  // namespace

struct Coordinator::Impl {
    explicit Impl(CoordinatorOptions options)
        : o(std::move(options)),
          core(o.policy),
          client(connect(o)),
          rejects(o.logger,
                  "the event queue of the store at " + format_endpoint(o.store.host, o.store.port)),
          malformed(o.logger, "more malformed events"),
          thread([this] { loop(); }) {}

    ~Impl() {
        {
            std::lock_guard lock(mu);
            stopping = true;
        }
        changed.notify_all();
        client->interrupt();
        thread.join();
    }

    CoordinatorOptions o;
    std::mutex mu;  ///< guards core
    std::condition_variable changed;
    CoordinatorCore core;
    std::unique_ptr<rdzv::Store> client;
    std::atomic<bool> stopping{false};
    RejectLog rejects;
    WarningLimiter malformed;  ///< events that passed authentication but do not decode
    std::map<int, std::string> round_tokens;  ///< coordinator thread only
    /// A store call failed since the last one answered (coordinator thread).
    bool failed = false;
    std::thread thread;

    std::string saved_state;  ///< what was last written under state_key (coordinator thread)
    /// The nodes of an earlier job under the run id, whose state was set aside (coordinator
    /// thread): their joins, still queued, are dropped.
    std::set<std::string> earlier_job;

    /// True when node `id` keeps its lease alive (etcd backend).
    bool alive(const std::string& id) { return client->check({o.keys.alive(id)}); }

    /// True when one of nodes `ids` (their alive keys exist) advances its heartbeat counter
    /// within policy.lost_after: a node whose agent was killed keeps its key for its lease's TTL,
    /// but beats no more.
    bool one_beats(const std::vector<std::string>& ids) {
        auto counters = [&] {
            std::map<std::string, std::string> now;
            for (const auto& id : ids) {
                const auto key = o.keys.heartbeat(id);
                if (client->check({key})) now[id] = client->get(key, kIoTimeout);
            }
            return now;
        };
        const auto first = counters();
        const auto end = Clock::now() + o.policy.lost_after;
        while (Clock::now() < end) {
            {
                std::unique_lock lock(mu);
                if (changed.wait_for(lock,
                                     std::min<Clock::duration>(o.heartbeat, end - Clock::now()),
                                     [this] { return stopping.load(); }))
                    return true;  // stopping: nothing is decided
            }
            for (const auto& [id, count] : counters()) {
                auto was = first.find(id);
                if (was == first.end() || was->second != count) return true;
            }
        }
        return false;
    }

    /// Takes over the state another coordinator left under state_key, if any.
    void take_over() {
        if (o.state_key.empty() || !client->check({o.state_key})) return;
        std::string why;
        auto text = o.auth.open(o.state_key, client->get(o.state_key, kIoTimeout), &why);
        if (!text) {
            o.logger->warn("rendezvous coordinator: ignoring the state at {} ({})", o.state_key,
                           why);
            return;
        }
        CoordinatorCore restored(o.policy);
        std::string previous;
        std::map<int, std::string> tokens;
        try {
            auto j = nlohmann::json::parse(*text);
            previous = j.at("leader").get<std::string>();
            restored.restore(j.at("core").get<std::string>(), Clock::now());
            for (const auto& [round, token] : j.at("tokens").items())
                tokens[std::stoi(round)] = token.get<std::string>();
        } catch (const std::exception& e) {
            o.logger->warn("rendezvous coordinator: ignoring a malformed state at {} ({})",
                           o.state_key, e.what());
            return;
        }
        std::vector<std::string> gone, listed;
        bool any_alive = false;
        const auto known = restored.known_nodes();
        for (const auto& id : known) {
            if (id == o.self_id) {
                any_alive = true;  // this node, taking over its own job
            } else if (alive(id)) {
                listed.push_back(id);
            } else {
                gone.push_back(id);
            }
        }
        if (!any_alive && !listed.empty()) any_alive = one_beats(listed);
        if (!any_alive) {
            o.logger->info(
                "rendezvous: the state left under {} is of an earlier job (none of its "
                "nodes lives); starting afresh",
                o.state_key);
            earlier_job.insert(known.begin(), known.end());
            if (o.forget_job) o.forget_job(known);
            return;
        }
        // A finished state with a live node is this job ending: taken over as it is (a late
        // join hears that the job has ended).
        {
            std::lock_guard lock(mu);
            core = std::move(restored);
        }
        round_tokens = std::move(tokens);
        saved_state = *text;
        if (previous != o.self_id)
            o.logger->info("rendezvous coordinator taken over from {}", previous);
        const auto now = Clock::now();
        for (const auto& id : gone) {
            run([&] { return core.on_gone(id, o.gone_reason, now); });
        }
    }

    /// Writes the state for a coordinator that may take over, when it changed.
    void save_state() {
        if (o.state_key.empty()) return;
        nlohmann::json tokens = nlohmann::json::object();
        std::string core_state;
        {
            std::lock_guard lock(mu);
            core_state = core.save();
        }
        // The running round's token, and the one before (its end may be read late).
        for (auto it = round_tokens.rbegin(); it != round_tokens.rend() && tokens.size() < 2; ++it)
            tokens[std::to_string(it->first)] = it->second;
        auto text =
            nlohmann::json{{"leader", o.self_id}, {"core", core_state}, {"tokens", tokens}}.dump();
        if (text == saved_state) return;
        client->set(o.state_key, o.auth.seal(o.state_key, text));
        saved_state = std::move(text);
    }

    void loop() {
        try {
            client->set(o.keys.clock(), "");  // exists: a GET of it answers the server's clock
            take_over();
        } catch (const rdzv::StoreError& e) {
            // the loop below says what is wrong with the store
            if (!o.state_key.empty()) o.logger->warn("rendezvous coordinator: {}", e.what());
        }
        auto next_beat = Clock::now() + o.heartbeat;
        bool lost = false;  // since the last ConnectionLost, no call has succeeded
        while (!stopping) {
            try {
                auto wake = next_beat;
                {
                    std::lock_guard lock(mu);
                    if (auto d = core.deadline()) wake = std::min(wake, *d);
                }
                const auto asked = Clock::now();
                auto left = std::chrono::duration_cast<milliseconds>(wake - asked);
                if (left > milliseconds(0)) {
                    pop_events(left);
                    store_answered(asked, left);
                    if (std::exchange(lost, false)) {
                        o.logger->info("rendezvous coordinator reconnected to its store");
                    }
                }
                const auto now = Clock::now();
                run([&] { return core.on_tick(now); });
                if (now >= next_beat) {
                    read_beats(now);
                    next_beat = now + o.heartbeat;
                }
            } catch (const rdzv::ConnectionLost& e) {
                // The TCP client reconnects on its next call (within its connect_timeout); a
                // pause keeps a store that fails at once from spinning this loop. Leaving would
                // strand every agent waiting for a round.
                if (stopping) return;
                if (!lost) {
                    o.logger->warn(
                        "rendezvous coordinator lost its store connection ({}); reconnecting",
                        e.what());
                }
                lost = true;
                failed = true;
                pause_after_lost();
            } catch (const rdzv::StoreError& e) {
                if (!stopping) o.logger->warn("rendezvous coordinator: {}", e.what());
                failed = true;
            }
        }
    }

    /// Tells the core that a store call made at `asked` and bound to answer within `bound`
    /// answered now: late (a stalled store), or the first answer after failures, no node's
    /// silence counts until now.
    void store_answered(Clock::time_point asked, milliseconds bound) {
        const auto now = Clock::now();
        std::lock_guard lock(mu);
        if (std::exchange(failed, false)) core.on_store_back(now);
        core.on_store_answer(asked, bound, now);
    }

    /// Waits min(heartbeat, kLostPause), or less when the coordinator stops.
    void pause_after_lost() {
        std::unique_lock lock(mu);
        changed.wait_for(lock, std::min(o.heartbeat, kLostPause),
                         [this] { return stopping.load(); });
    }

    /// Pops what the queue holds (up to kMaxEventBatch) in one exchange and feeds the core every
    /// event before writing anything back: at 4,096 joining nodes, round trips per event were
    /// the coordinator's whole cost.
    void pop_events(milliseconds timeout) {
        std::vector<std::string> texts;
        try {
            texts = client->queue_pop_batch(o.keys.events(), kMaxEventBatch, timeout);
        } catch (const rdzv::StoreTimeout&) {
            return;
        }
        std::vector<RdzvEvent> events;
        events.reserve(texts.size());
        std::vector<std::string> alive_keys;  // etcd: of the joins, whose leases must still live
        for (const auto& stored : texts) {
            std::string why;
            auto text = o.auth.open(o.keys.events(), stored, &why);
            if (!text) {
                rejects.note(o.keys.events(), why);
                continue;
            }
            try {
                auto event = decode_event(*text);
                if (auto* r = std::get_if<NodeReport>(&event)) {
                    bool member = false;  // a spare's, a raw client's under another id: dropped
                    {
                        std::lock_guard lock(mu);
                        member = core.reports_for(r->round, r->id);
                    }
                    if (member && o.on_report) o.on_report(std::move(*r));
                    continue;  // news for the store host's agent, not for the rounds
                }
                if (auto* j = std::get_if<JoinEvent>(&event); j && !o.state_key.empty()) {
                    if (earlier_job.count(j->node.id)) continue;  // an earlier job's agent
                    alive_keys.push_back(o.keys.alive(j->node.id));
                }
                events.push_back(std::move(event));
            } catch (const std::runtime_error& e) {
                malformed.warn(std::string("rendezvous: ignoring a malformed event (") + e.what() +
                               ")");
            }
        }
        // A join counts only while its node's lease lives: one read for the whole batch, and
        // only a batch holding an expired lease is sorted out node by node. The events are off
        // the queue already: when the store fails here they are kept (a dead node among them is
        // found by its silent heartbeat), not lost.
        std::set<std::string> expired;
        try {
            if (!alive_keys.empty() && !client->check(alive_keys)) {
                for (const auto& event : events) {
                    auto* j = std::get_if<JoinEvent>(&event);
                    if (j && !alive(j->node.id)) expired.insert(j->node.id);
                }
            }
        } catch (const rdzv::StoreError& e) {
            o.logger->warn(
                "rendezvous coordinator: cannot read the joining nodes' leases ({}); taking "
                "their joins as they are",
                e.what());
        }
        std::erase_if(events, [&](const RdzvEvent& event) {
            auto* j = std::get_if<JoinEvent>(&event);
            return j && expired.count(j->node.id) > 0;
        });
        const auto now = Clock::now();
        run([&] {
            std::vector<CoordinatorCommand> out;
            for (const auto& event : events) {
                for (auto& c : core.on_event(event, now)) out.push_back(std::move(c));
            }
            return without_stale_status(std::move(out));
        });
    }

    void read_beats(Clock::time_point now) {
        std::vector<std::string> ids;
        {
            std::lock_guard lock(mu);
            ids = core.beating_nodes();  // members, and spares: a dead one leaves the list
        }
        if (ids.empty()) return;
        std::vector<std::string> keys;
        for (const auto& id : ids) keys.push_back(o.keys.heartbeat(id));
        std::map<std::string, std::int64_t> counters;
        try {
            // One MULTI_GET for every member (each added to its counter before joining), not a
            // round trip per member: at 4,096 nodes those took longer than a heartbeat interval.
            const auto asked = Clock::now();
            auto values = client->multi_get(keys, std::min(o.heartbeat, kBeatReadWait));
            store_answered(asked, milliseconds(0));
            for (std::size_t i = 0; i < ids.size(); ++i) {
                if (auto n = counter_value(values[i])) counters[ids[i]] = *n;
            }
        } catch (const rdzv::StoreTimeout&) {
            for (std::size_t i = 0; i < ids.size(); ++i) {
                // add(0) reads a counter without blocking on a key that is not there yet.
                counters[ids[i]] = client->add(keys[i], 0);
            }
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
        save_state();
        changed.notify_all();
    }

    void execute(const CoordinatorCommand& command) {
        if (auto* p = std::get_if<PublishRound>(&command)) {
            if (o.clear_worker_keys) o.clear_worker_keys();
            const auto& a = p->assignment;
            // Each admitted node gets its own placement as its admission: O(1) bytes per node.
            auto placed = placements(a);
            const std::string token = random_token();
            round_tokens[a.round] = token;
            for (auto& one : placed) one.token = token;
            std::unordered_map<std::string, std::size_t> group_rank;
            for (std::size_t g = 0; g < a.members.size(); ++g)
                group_rank.emplace(a.members[g].id, g);
            std::vector<std::string> keys;
            std::vector<std::string> values;
            for (const auto& [id, seq] : p->admitted) {
                keys.push_back(o.keys.admit(id, seq));
                const Admission admission = placed[group_rank.at(id)];
                values.push_back(o.auth.seal(keys.back(), encode(admission)));
            }
            client->multi_set(keys, values);
            o.logger->info("rendezvous round {} closed: {} node(s), world size {}, restart {}",
                           a.round, a.members.size(), a.world_size(), a.restart_count);
        } else if (auto* e = std::get_if<EndRound>(&command)) {
            const std::string key = o.keys.end(e->round);
            // Every agent, the store host's too, says how the round ended (RoundDriver): saying
            // it here as well printed each end twice on the store host.
            client->set(key, o.auth.seal(key + "\n" + round_tokens[e->round], encode(e->end)));
        } else if (auto* r = std::get_if<RejectJoin>(&command)) {
            const std::string key = o.keys.admit(r->id, r->seq);
            client->set(key, o.auth.seal(key, encode(Admission{AdmissionRefused{r->message}})));
        } else if (auto* s = std::get_if<PublishStatus>(&command)) {
            client->set(o.keys.status(), o.auth.seal(o.keys.status(), std::to_string(s->joined)));
        } else if (auto* swap = std::get_if<ReplaceMember>(&command)) {
            // The lost member stops its workers at its next beat if it is only slow, before
            // the spare's ranks start.
            client->add(o.keys.heartbeat(swap->lost_id), kEvictedBeat);
            const auto& a = swap->assignment;
            auto placed = placements(a)[static_cast<std::size_t>(swap->group_rank)];
            placed.token = round_tokens[a.round];  // the round's ends stay authenticated
            placed.replacement = true;
            const std::string key = o.keys.admit(swap->admitted.first, swap->admitted.second);
            client->set(key, o.auth.seal(key, encode(Admission{placed})));
            const auto& spare = a.members[static_cast<std::size_t>(swap->group_rank)];
            o.logger->warn(
                "{}; the spare {} takes its place in round {} (group rank {}, ranks {}..{}) as a "
                "new generation, the other nodes keep running",
                swap->why, spare.hostname, a.round, swap->group_rank, placed.rank_base,
                placed.rank_base + spare.nproc - 1);
        } else if (auto* m = std::get_if<MarkSpares>(&command)) {
            for (const auto& [id, seq] : m->spares) {
                const std::string key = o.keys.spare(id, seq);
                client->set(key, o.auth.seal(key, std::to_string(m->round)));
            }
        }
    }
};

Coordinator::Coordinator(CoordinatorOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
Coordinator::~Coordinator() = default;

std::vector<std::string> Coordinator::spare_hosts() const {
    std::lock_guard lock(impl_->mu);
    return impl_->core.spare_hosts();
}

bool Coordinator::wait_drained(const std::string& self, std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->mu);
    return impl_->changed.wait_for(lock, timeout, [&] { return impl_->core.drained(self); });
}

std::optional<std::vector<std::string>> Coordinator::wait_members_left(
    const std::string& self, std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->mu);
    impl_->changed.wait_for(lock, timeout, [&] { return impl_->core.not_left(self).empty(); });
    return impl_->core.not_left(self);
}

}  // namespace ptrun::launcher
