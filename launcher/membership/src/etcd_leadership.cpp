#include "ptrun/launcher/membership/etcd_leadership.hpp"

#include <spdlog/spdlog.h>

#include <utility>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "ptrun/etcd/errors.hpp"
#include "ptrun/etcd/etcd_store.hpp"
#include "ptrun/launcher/membership/coordinator_slot.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// After a failed exchange with etcd, the pause before the next try.
constexpr milliseconds kRetryPause{500};
/// How long one watch of the leader key lasts before the campaign watches on from where it was.
constexpr milliseconds kWatchChunk{60'000};

/// A retrying loop's failures, each said once until etcd answers again (which is said too).
class FailureLog {
  public:
    explicit FailureLog(spdlog::logger& log) : log_(log) {}
    void failed(const std::string& what) {
        if (what == last_) return;
        log_.warn("rendezvous leadership: {}", what);
        last_ = what;
    }
    void answered() {
        if (!last_.empty()) log_.info("etcd answers again");
        last_.clear();
    }

  private:
    spdlog::logger& log_;
    std::string last_;
};

}  // namespace

struct EtcdLeadership::Impl {
    explicit Impl(EtcdLeadershipOptions options) : o(std::move(options)), client(o.client) {
        client.limit_until(o.start_by);
        lease = client.lease_grant(o.lease_ttl_s);
        take_or_read(alive_put());  // the alive key is there before any join follows
        client.limit_until(std::nullopt);
        renewer = std::thread([this] { renew_loop(); });
        thread = std::thread([this] { campaign_loop(); });
    }

    ~Impl() {
        {
            std::lock_guard lock(mu);
            stopping = true;
        }
        wake.notify_all();
        client.interrupt();
        thread.join();
        renewer.join();
        slot.stop();
        try {
            etcd::Client last(o.client);  // the loop's client is interrupted
            if (slot.drained()) {
                // The job is over and its nodes have left: its keys go, so that a later job under
                // the same run id starts afresh.
                const auto& prefix = keys().prefix;
                last.delete_range(prefix, etcd::prefix_end(prefix));
            }
            last.lease_revoke(lease);  // the leader and alive keys go at once
        } catch (const rdzv::StoreError& e) {
            // the lease expires by itself within its TTL
            if (slot.drained())
                o.coordinator.logger->warn("could not remove the job's keys from etcd: {}",
                                           e.what());
        }
    }

    EtcdLeadershipOptions o;
    etcd::Client client;  ///< both threads' (its unary calls are serialised, a watch has its own)
    std::atomic<std::int64_t> lease{0};  ///< replaced by the renewer when it expired
    std::mutex mu;                       ///< guards stopping
    std::condition_variable wake;
    bool stopping = false;
    /// The coordinator while this node leads. Once retired (wait_drained) the node campaigns no
    /// more: a late holder would write a fresh state where the last one removed the job's keys.
    CoordinatorSlot slot;
    /// The revision from which the leader key is known to have kept its present holder (0:
    /// unknown): the next campaign watches on from there instead of asking etcd again (at 1,024
    /// waiting agents, a transaction per agent every renewal).
    std::int64_t holder_since = 0;  ///< the campaign thread's
    std::thread renewer;            ///< keeps the lease alive
    std::thread thread;             ///< campaigns, or waits while this node leads

    const RdzvKeys& keys() const { return o.coordinator.keys; }
    milliseconds renew_every() const { return milliseconds(o.lease_ttl_s * 1000 / 3); }

    /// Renews the lease every TTL/3 beside the campaign, whose watch of the leader stays open
    /// across renewals (one stream per agent instead of one per agent and renewal).
    void renew_loop() {
        auto next = Clock::now() + renew_every();
        FailureLog failures(*o.coordinator.logger);
        while (true) {
            {
                std::unique_lock lock(mu);
                if (wake.wait_until(lock, next, [this] { return stopping; })) return;
            }
            try {
                renew();
                next = Clock::now() + renew_every();
                failures.answered();
            } catch (const rdzv::StoreError& e) {
                {
                    std::lock_guard lock(mu);
                    if (stopping) return;  // the destructor interrupted the client
                }
                failures.failed(e.what());
                next = Clock::now() + kRetryPause;
            }
        }
    }

    /// Takes the role when it is free, or waits while this node holds it (until its lease
    /// expired: renew() stops the coordinator and wakes this thread).
    void campaign_loop() {
        FailureLog failures(*o.coordinator.logger);
        while (true) {
            try {
                {
                    std::unique_lock lock(mu);
                    if (stopping) return;
                    if (slot.running() || slot.retired()) {
                        wake.wait_for(lock, renew_every(), [this] {
                            return stopping || !(slot.running() || slot.retired());
                        });
                        continue;
                    }
                }
                campaign(kWatchChunk);
                failures.answered();
            } catch (const rdzv::StoreError& e) {
                holder_since = 0;  // ask again: a watch from there may be what failed (compacted)
                {
                    std::lock_guard lock(mu);
                    if (stopping) return;  // the destructor interrupted the client
                }
                failures.failed(e.what());
                std::unique_lock lock(mu);
                wake.wait_for(lock, kRetryPause, [this] { return stopping; });
            }
        }
    }

    /// Keeps the lease alive; a lease that expired (etcd did not hear from this node for its TTL)
    /// ends this node's coordinating, and a new one is granted.
    void renew() {
        if (client.lease_keepalive(lease) > 0) return;
        if (slot.running()) {
            o.coordinator.logger->warn(
                "rendezvous: this node's etcd lease expired; it no longer coordinates");
        }
        slot.stop();
        lease = client.lease_grant(o.lease_ttl_s);
        client.put(keys().alive(o.self_id), o.self_id, lease);
        {
            std::lock_guard lock(mu);  // the campaign thread campaigns again at once
        }
        wake.notify_all();
    }

    /// The put of this node's alive key on its lease.
    etcd::Op alive_put() const { return etcd::Op::put(keys().alive(o.self_id), o.self_id, lease); }

    /// One transaction: takes the role if nobody holds it (this node leads from then on), else
    /// reads its holder and notes from when it is known (holder_since); `also`, if any, is
    /// written either way.
    void take_or_read(std::optional<etcd::Op> also = std::nullopt) {
        const auto key = keys().leader();
        // Nobody holds the role: the key was never created.
        const auto vacant = etcd::Compare::equal(key, etcd::Compare::Target::Create, 0);
        std::vector<etcd::Op> taken{etcd::Op::put(key, o.self_id, lease)};
        std::vector<etcd::Op> held{etcd::Op::range(key)};
        if (also) {
            taken.push_back(*also);
            held.push_back(*also);
        }
        auto result = client.txn({vacant}, taken, held);
        if (result.succeeded) {
            lead(etcd::Fence{key, result.revision});
            return;
        }
        if (!result.ranges.empty() && !result.ranges[0].empty()) {
            const auto& holder = result.ranges[0][0];
            if (holder.value == o.self_id && holder.lease == lease) {
                lead(etcd::Fence{key, holder.create_revision});  // this node's, from before
                return;
            }
        }
        holder_since = result.revision + 1;
    }

    /// Takes the role if nobody holds it, else waits (at most `left`) for its holder to go.
    void campaign(milliseconds left) {
        const auto key = keys().leader();
        if (holder_since == 0) {
            take_or_read();
            if (slot.running()) return;
        }
        // The holder keeps the key until it goes (its lease revoked or expired: a delete); a
        // watch that ends without one leaves the holder known, and the next watches on.
        for (const auto& e : client.watch(key, "", holder_since, left)) {
            if (e.type == etcd::WatchEvent::Type::Delete) {
                holder_since = 0;
                return;  // campaign again at once
            }
            holder_since = std::max(holder_since, e.kv.mod_revision + 1);
        }
    }

    void lead(etcd::Fence fence) {
        auto co = o.coordinator;
        co.state_key = keys().coordinator_state();
        co.self_id = o.self_id;
        co.forget_job = [client = o.client, keys = keys()](const std::vector<std::string>& ids) {
            etcd::Client c(client);
            const auto range = [&](const std::string& prefix) {
                c.delete_range(prefix, etcd::prefix_end(prefix));
            };
            for (const auto& id : ids) {
                range(keys.admissions(id));
                range(keys.spare_marks(id));
                c.delete_range(keys.heartbeat(id));
            }
            range(keys.rounds());
            c.delete_range(keys.status());
        };
        co.connect = etcd_store_connector(o.client, fence);
        o.coordinator.logger->info("this node now coordinates the rendezvous (etcd lease {:x})",
                                   lease);
        slot.start(std::move(co));
    }
};

EtcdLeadership::EtcdLeadership(EtcdLeadershipOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
EtcdLeadership::~EtcdLeadership() = default;

bool EtcdLeadership::leads() const { return impl_->slot.running(); }

bool EtcdLeadership::wait_drained(const std::string& self, std::chrono::milliseconds timeout) {
    return impl_->slot.drain(self, timeout);
}

std::optional<std::vector<std::string>> EtcdLeadership::wait_members_left(
    const std::string& self, std::chrono::milliseconds timeout) {
    return impl_->slot.wait_members_left(self, timeout);
}

std::vector<std::string> EtcdLeadership::spare_hosts() const { return impl_->slot.spare_hosts(); }

}  // namespace ptrun::launcher
