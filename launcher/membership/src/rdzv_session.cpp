#include "ptrun/launcher/membership/rdzv_session.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>

#include "ptrun/launcher/membership/admission.hpp"
#include "ptrun/launcher/membership/rdzv_events.hpp"
#include "ptrun/launcher/membership/rdzv_reject_log.hpp"
#include "ptrun/launcher/membership/session_stores.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using Role = SessionStores::Role;

constexpr milliseconds kFirstProgress{1'000};  // a join slower than this is said at once
constexpr milliseconds kWatchChunk{24 * 3600 * 1000};
/// After a rejected (forged) value, how long before the key is read again: its genuine value
/// overwrites the forgery, and the store has no wait-for-change to wait on.
constexpr milliseconds kRereadAfterReject{500};

RdzvSessionOptions with_connector(RdzvSessionOptions o) {
    if (!o.connect) o.connect = tcp_store_connector(o.store, o.settings.join_timeout);
    return o;
}

long seconds_since(Clock::time_point t) {
    return static_cast<long>(
        std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - t).count());
}

}  // namespace

struct RdzvSession::Impl {
    explicit Impl(RdzvSessionOptions options)
        : o(with_connector(std::move(options))),
          stores(o.connect, o.settings.read_timeout, beat_timeout()),
          rejects(o.logger, "the store at " + where()),
          beater([this] { beat_loop(); }) {}

    ~Impl() { stop(); }

    RdzvSessionOptions o;
    SessionStores stores;  ///< one connection shared by the threads where the store allows
    std::mutex mu;
    std::condition_variable wake;
    std::deque<std::string> outbox;  ///< encoded events for the coordinator
    std::function<void(std::string)> on_lost;
    bool lost_reported = false;
    bool in_flight = false;  ///< the beat thread is sending events taken from the outbox
    bool beat_dead = false;  ///< the beat thread gave up (store unreachable)
    bool beaten = false;     ///< the beat thread's first ADD went through
    std::atomic<bool> stopping{false};
    RejectLog rejects;
    std::optional<ClockOffset> offset;  ///< under mu
    int seq = 0;
    std::thread joiner;
    std::thread watcher;
    std::thread beater;

    milliseconds beat_timeout() const {
        return o.settings.heartbeat * o.settings.keep_alive_max_attempt;
    }

    std::string where() const {
        return o.store_name.empty() ? format_endpoint(o.store.host, o.store.port) : o.store_name;
    }

    void beat_loop() {
        std::unique_lock lock(mu);
        auto next_beat = Clock::now();  // the first at once
        while (!stopping) {
            std::deque<std::string> sending;
            sending.swap(outbox);
            in_flight = !sending.empty();
            // Events between two beats go alone: the coordinator needs an ADD per heartbeat
            // period, and each is a request (through etcd, a transaction).
            const bool beat = Clock::now() >= next_beat;
            lock.unlock();
            std::string error;
            bool evicted = false;
            try {
                stores.call(Role::Beat, [&](rdzv::Store& store) {
                    if (beat) evicted = store.add(o.keys.heartbeat(o.self.id), 1) >= kEvictedBeat;
                    // Several at once in one request where the store can (etcd: a txn).
                    std::vector<std::string> sealed;
                    for (const auto& e : sending) sealed.push_back(o.auth.seal(o.keys.events(), e));
                    if (!sealed.empty()) store.queue_push_many(o.keys.events(), sealed);
                });
            } catch (const rdzv::StoreError& e) {
                error = e.what();
            }
            lock.lock();
            in_flight = false;
            if (beat && error.empty()) {
                next_beat = Clock::now() + o.settings.heartbeat;
                beaten = true;
            }
            if (evicted) {
                beat_dead = true;
                wake.notify_all();
                if (stopping) return;
                auto tell =
                    lost_report("the rendezvous declared this node lost (no heartbeat reached " +
                                where() + " in time) and gave its place to another node");
                lock.unlock();
                if (tell) tell();
                return;
            }
            if (!error.empty()) {
                beat_dead = true;
                wake.notify_all();
                if (stopping) return;
                auto tell = lost_report("the rendezvous store at " + where() +
                                        " stopped answering: " + error);
                lock.unlock();
                if (tell) tell();
                return;
            }
            wake.notify_all();  // stop() may wait for the outbox to drain, a join for a beat
            wake.wait_until(lock, next_beat, [this] { return stopping || !outbox.empty(); });
        }
    }

    /// Under mu: the call that tells the watcher's owner, the first time only (else empty). The
    /// caller makes it after unlocking mu: the owner may call back into the session.
    std::function<void()> lost_report(std::string message) {
        if (lost_reported || !on_lost) return {};
        lost_reported = true;
        return [tell = on_lost, message = std::move(message)] { tell(message); };
    }

    void send(const RdzvEvent& event) {
        std::lock_guard lock(mu);
        outbox.push_back(encode(event));
        wake.notify_all();
    }

    /// On the join thread: this node's clock offset to the store host, the sample with the
    /// smallest round trip of 5 GETs of its clock key; left as it was when the key is missing.
    /// Once per session: monotonic clocks keep their offset, and at 16,384 nodes every node's
    /// 5 samples at each admission were half of the store's work in a close.
    void measure_clock() {
        if (!o.store_has_clock) return;
        {
            std::lock_guard lock(mu);
            if (offset || stopping) return;
        }
        std::optional<ClockOffset> best;
        for (int i = 0; i < 5; ++i) {
            timespec before{}, after{};
            std::string text;
            try {
                text = stores.wait(Role::Join, milliseconds(2'000),
                                   [&](rdzv::Store& store, milliseconds time_left) {
                                       ::clock_gettime(CLOCK_MONOTONIC, &before);
                                       auto now = store.get(o.keys.clock(), time_left);
                                       ::clock_gettime(CLOCK_MONOTONIC, &after);
                                       return now;
                                   });
            } catch (const rdzv::StoreError&) {
                return;
            }
            auto ns = [](const timespec& t) {
                return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
            };
            std::int64_t host = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), host);
            if (ec != std::errc() || end != text.data() + text.size()) return;  // not a clock
            const std::int64_t mid = ns(before) + (ns(after) - ns(before)) / 2;
            const auto error = static_cast<std::uint64_t>((ns(after) - ns(before)) / 2);
            if (!best || error < best->error_ns) best = ClockOffset{host - mid, error};
        }
        std::lock_guard lock(mu);
        offset = best;
    }

    void join(std::function<void(NodePlacement)> done,
              std::function<void(RendezvousError)> failed) {
        const int my_seq = ++seq;
        // The last join's thread may still measure the clock: the new one waits for it, the
        // caller (the agent's event loop) does not.
        joiner = std::thread([this, my_seq, last = std::move(joiner), done = std::move(done),
                              failed = std::move(failed)]() mutable {
            if (last.joinable()) last.join();
            try {
                auto placement = join_round(my_seq);
                done(std::move(placement));
                measure_clock();  // after: the offset is for the timeline, not for the start
            } catch (const RendezvousError& e) {
                if (!stopping) failed(e);
            } catch (const rdzv::StoreError& e) {
                if (!stopping)
                    failed(RendezvousError("rendezvous through the store at " + where() +
                                           " failed: " + e.what()));
            } catch (const std::runtime_error& e) {
                if (!stopping) failed(RendezvousError(std::string("rendezvous: ") + e.what()));
            }
        });
    }

    NodePlacement join_round(int my_seq) {
        const auto start = Clock::now();
        // The coordinator reads every member's counter in one MULTI_GET, which waits for each
        // to exist: the first join waits for the beat thread's first ADD, which makes this
        // node's (an ADD of its own would be one request more, and through etcd a conflict
        // with the beat's). Later joins find it there.
        if (my_seq == 1) {
            std::unique_lock lock(mu);
            wake.wait(lock, [this] { return beaten || beat_dead || stopping; });
            if (!beaten) {  // the store failed the beat: this ADD says how, as before
                lock.unlock();
                stores.call(Role::Join,
                            [&](rdzv::Store& store) { store.add(o.keys.heartbeat(o.self.id), 1); });
            }
        }
        NodeInfo self = o.self;
        if (o.before_join) self.store_port = o.before_join();
        const std::string join = encode(RdzvEvent{JoinEvent{std::move(self), my_seq}});
        stores.call(Role::Join, [&](rdzv::Store& store) {
            store.queue_push(o.keys.events(), o.auth.seal(o.keys.events(), join));
        });
        const std::string admit = o.keys.admit(o.self.id, my_seq);
        auto deadline = start + o.settings.join_timeout;
        bool spare = false;
        std::string verdict;
        bool waited = false;
        struct EndProgress {  // the person waiting hears that the join ended, however it ends
            Impl& s;
            bool& waited;
            ~EndProgress() {
                if (waited && s.o.on_waiting) s.o.on_waiting(JoinProgress{.done = true});
            }
        } end_progress{*this, waited};
        // A first join says it waits after a second (the person starting the job learns what
        // to run on the other nodes); a round re-forming, after progress_every (at 16,384
        // nodes, every node's progress reads at 1 s were a tenth of the store's work).
        const milliseconds first = my_seq == 1 ? kFirstProgress : o.progress_every;
        for (milliseconds chunk = first;; chunk = o.progress_every) {
            auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
            try {
                // get() is WAIT then GET: no separate wait() (one request per node fewer).
                const auto wait = std::clamp(left, milliseconds(1), chunk);
                auto stored = get(Role::Join, admit, wait);
                if (auto v = authentic(admit, stored)) {
                    verdict = std::move(*v);
                    break;
                }
                pause_after_reject();
                if (Clock::now() >= deadline) {
                    throw RendezvousError("rendezvous timed out after " +
                                          std::to_string(seconds_since(start)) +
                                          " s: this node's admission in the store was never "
                                          "authentic (see the rejections above)");
                }
                continue;
            } catch (const rdzv::StoreTimeout&) {
                const auto news = spare ? ChunkNews{} : chunk_news(my_seq);
                if (!spare && news.spare) {
                    spare = true;
                    // A spare waits for a place as long as the job runs: no join_timeout.
                    deadline = Clock::time_point::max();
                    o.logger->info(
                        "this node waits as a spare: the job runs with its {} nodes (--nnodes "
                        "max); it takes the place of a node that is lost",
                        o.nnodes.max);
                }
                if (spare) continue;
                if (Clock::now() >= deadline) {
                    throw RendezvousError("rendezvous timed out after " +
                                          std::to_string(seconds_since(start)) +
                                          " s waiting for nodes: " + joined_text(news.joined) +
                                          " (join_timeout in --rdzv-conf)");
                }
                waited = true;
                if (o.on_waiting) {
                    o.on_waiting(JoinProgress{false, news.joined,
                                              std::chrono::seconds(seconds_since(start))});
                } else {
                    o.logger->info(
                        "waiting for nodes: {}, {} s of {} s", joined_text(news.joined),
                        seconds_since(start),
                        std::chrono::duration_cast<std::chrono::seconds>(o.settings.join_timeout)
                            .count());
                }
            }
        }
        auto admission = decode_admission(verdict);
        if (auto* refused = std::get_if<AdmissionRefused>(&admission)) {
            if (spare && refused->message == kJobEnded) {
                RendezvousError e("the job ended while this node waited as a spare");
                e.exit_code = 0;
                throw e;
            }
            RendezvousError e("rendezvous refused this node: " + refused->message);
            e.exit_code = 2;
            throw e;
        }
        return std::get<NodePlacement>(std::move(admission));
    }

    /// What the end of a wait chunk learns: whether the coordinator marked this node's
    /// `join_seq`-th join a spare (authentic), and the nodes joined so far per its status key
    /// (-1 when unknown).
    struct ChunkNews {
        bool spare = false;
        int joined = -1;
    };

    /// Both in one read that does not wait (one request through etcd, which is what every
    /// waiting agent sends at each chunk's end; three before, at 1,024 agents a quarter of
    /// etcd's work).
    ChunkNews chunk_news(int join_seq) {
        const std::string spare_key = o.keys.spare(o.self.id, join_seq);
        const std::string status_key = o.keys.status();
        ChunkNews news;
        try {
            const auto values = stores.call(Role::Join, [&](rdzv::Store& store) {
                return store.peek({spare_key, status_key});
            });
            if (values.size() != 2) return news;
            news.spare = values[0] && authentic(spare_key, *values[0]).has_value();
            if (values[1]) {
                if (auto v = authentic(status_key, *values[1])) news.joined = std::stoi(*v);
            }
        } catch (const rdzv::StoreError&) {
        } catch (const std::logic_error&) {  // a status that is not a number
        }
        return news;
    }

    /// The value of `key` once it exists, within `timeout`, on `role`'s connection (WAIT then
    /// GET; StoreTimeout after `timeout`).
    std::string get(Role role, const std::string& key, milliseconds timeout) {
        return stores.wait(role, timeout, [&](rdzv::Store& store, milliseconds time_left) {
            return store.get(key, time_left);
        });
    }

    /// "N joined (min A, max B)", N "?" when unknown (-1).
    std::string joined_text(int n) {
        return (n < 0 ? "?" : std::to_string(n)) + " joined (min " + std::to_string(o.nnodes.min) +
               ", max " + std::to_string(o.nnodes.max) + ")";
    }

    /// `stored` opened with the job's key, or nullopt (logged) when it is not authentic.
    std::optional<std::string> authentic(const std::string& key, const std::string& stored,
                                         const std::string& bound_to = {}) {
        std::string why;
        auto v = o.auth.open(bound_to.empty() ? key : key + "\n" + bound_to, stored, &why);
        if (!v) rejects.note(key, why);
        return v;
    }

    /// Waits kRereadAfterReject, or less when the session stops.
    void pause_after_reject() {
        std::unique_lock lock(mu);
        wake.wait_for(lock, kRereadAfterReject, [this] { return stopping.load(); });
        if (stopping) throw rdzv::StoreError("the rendezvous session is stopping");
    }

    void watch(int round, std::string token, std::function<void(RoundEnd)> ended,
               std::function<void(std::string)> lost) {
        if (watcher.joinable()) watcher.join();
        {
            std::lock_guard lock(mu);
            on_lost = lost;
            lost_reported = false;
        }
        watcher = std::thread([this, round, token = std::move(token), ended = std::move(ended)] {
            const std::string key = o.keys.end(round);
            try {
                std::string text;
                for (;;) {
                    try {
                        auto stored = get(Role::Watch, key, kWatchChunk);
                        if (auto v = authentic(key, stored, token)) {
                            text = std::move(*v);
                            break;
                        }
                        pause_after_reject();
                    } catch (const rdzv::StoreNoReply&) {
                        throw;  // silence, not the chunk's end: reported below as such
                    } catch (const rdzv::StoreTimeout&) {
                    }
                }
                auto end = decode_end(text);
                if (!stopping) ended(end);
            } catch (const std::exception& e) {
                std::function<void()> tell;
                {
                    std::lock_guard lock(mu);
                    if (!stopping) {
                        // A cut link: the heartbeat cut the wait short and no reply came.
                        const bool silent = dynamic_cast<const rdzv::StoreNoReply*>(&e);
                        tell = lost_report(
                            (silent ? "the rendezvous store at " + where() + " stopped answering: "
                                    : "lost the rendezvous store at " + where() + ": ") +
                            e.what());
                    }
                }
                if (tell) tell();
            }
        });
    }

    void stop() {
        {
            std::unique_lock lock(mu);
            if (stopping) return;
            // Give queued reports (a failure, a departure) their chance to reach the coordinator.
            wake.wait_for(lock, o.settings.read_timeout,
                          [this] { return (outbox.empty() && !in_flight) || beat_dead; });
            stopping = true;
            wake.notify_all();
        }
        stores.interrupt();
        for (auto* t : {&joiner, &watcher, &beater}) {
            if (t->joinable()) t->join();
        }
    }
};

RdzvSession::RdzvSession(RdzvSessionOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
RdzvSession::~RdzvSession() = default;

void RdzvSession::join(std::function<void(NodePlacement)> done,
                       std::function<void(RendezvousError)> failed) {
    impl_->join(std::move(done), std::move(failed));
}
void RdzvSession::watch(const NodePlacement& placement, std::function<void(RoundEnd)> ended,
                        std::function<void(std::string)> lost) {
    impl_->watch(placement.round, placement.token, std::move(ended), std::move(lost));
}
void RdzvSession::report_failure(int round, RoundEnd end) {
    impl_->send(FailedEvent{round, impl_->o.self.id, std::move(end)});
}
void RdzvSession::report_success(int round) {
    impl_->send(SucceededEvent{round, impl_->o.self.id});
}
void RdzvSession::report_leaving(int round, std::string why) {
    impl_->send(LeavingEvent{round, impl_->o.self.id, std::move(why)});
}
void RdzvSession::report_checkpointed(int round, int exit_code, std::string why) {
    impl_->send(LeavingEvent{round, impl_->o.self.id, std::move(why), true, exit_code});
}
void RdzvSession::report(ReportKind kind, int round, std::string text) {
    if (text.size() > kMaxNodeReport) return;
    impl_->send(NodeReport{kind, round, impl_->o.self.id, std::move(text)});
}
std::optional<ClockOffset> RdzvSession::clock_offset() const {
    std::lock_guard lock(impl_->mu);
    return impl_->offset;
}
void RdzvSession::stop() { impl_->stop(); }

}  // namespace ptrun::launcher
