#include "ptrun/ddp/recovery.hpp"

#include "ptrun/ddp/errors.hpp"
#include "ptrun/env/env_map.hpp"
#include "ptrun/env/generation_keys.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"

namespace ptrun::ddp {
namespace keys = env::generation_keys;

struct Recovery::Impl {
    std::unique_ptr<rdzv::TcpStoreClient> client;
    std::chrono::milliseconds timeout;
    std::int64_t world_size;
    std::string where;  ///< "host:port", for messages

    /// Runs `body`, turning store failures into the collectives' errors, prefixed by `what`.
    template <class F>
    auto guarded(const std::string& what, F body) {
        try {
            return body();
        } catch (const rdzv::StoreTimeout& e) {
            throw CollectiveTimeout(what + ": " + e.what());
        } catch (const rdzv::StoreError& e) {
            throw CollectiveError(what + ": store at " + where + ": " + e.what());
        }
    }

    /// The decimal number at `key` (waiting for it at most the timeout).
    std::int64_t number_at(const std::string& key) {
        const std::string text = client->get(key, timeout);
        const auto value = env::parse_int(text);
        if (!value) {
            throw CollectiveError("recovery: key '" + key + "' holds '" + text +
                                  "', expected a generation number");
        }
        return *value;
    }
};

Recovery::Recovery(const RunContext& context, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
    impl_->timeout = timeout;
    impl_->world_size = context.world_size;
    impl_->where = context.master_addr + ":" + std::to_string(context.master_port);
    if (context.master_addr.empty() || context.master_port <= 0 || context.master_port > 65535) {
        throw CollectiveError(
            "recovery: needs the store address (MASTER_ADDR, MASTER_PORT), got '" + impl_->where +
            "'");
    }
    try {
        impl_->client = std::make_unique<rdzv::TcpStoreClient>(rdzv::TcpStoreClientOptions{
            .host = context.master_addr,
            .port = static_cast<std::uint16_t>(context.master_port),
            .dialect = rdzv::Dialect::Modern,
            .connect_timeout = timeout,
            .io_timeout = timeout,
        });
    } catch (const rdzv::StoreError& e) {
        throw CollectiveError("recovery: cannot reach the store at " + impl_->where + ": " +
                              e.what());
    }
}

Recovery::~Recovery() = default;

std::int64_t Recovery::join(std::int64_t generation) {
    Impl& s = *impl_;
    const std::string what = "recovery: joining generation " + std::to_string(generation);
    return s.guarded(what, [&] {
        for (;;) {
            const std::string ready = keys::ready(generation);
            if (s.client->add(keys::joined(generation), 1) == s.world_size) {
                s.client->compare_set(ready, "", keys::kJoined);
            }
            std::string state;
            try {
                state = s.client->get(ready, s.timeout);
            } catch (const rdzv::StoreTimeout& e) {
                const std::int64_t count = s.client->add(keys::joined(generation), 0);
                throw CollectiveTimeout(what + ": " + std::to_string(count) + " of " +
                                        std::to_string(s.world_size) + " workers joined; " +
                                        e.what());
            }
            if (state == keys::kJoined) return generation;
            if (state != keys::kSuperseded) {
                throw CollectiveError(what + ": key '" + ready + "' holds '" + state +
                                      "', expected 'joined' or 'superseded'");
            }
            const std::int64_t latest = s.number_at(keys::kLatest);
            if (latest <= generation) {
                throw CollectiveError(what + ": it was superseded but '" + keys::kLatest + "' is " +
                                      std::to_string(latest));
            }
            generation = latest;
        }
    });
}

std::int64_t Recovery::await_next(std::int64_t generation) {
    Impl& s = *impl_;
    const std::int64_t next = generation + 1;
    return s.guarded("recovery: waiting for generation " + std::to_string(next), [&] {
        s.client->wait({keys::begun(next)}, s.timeout);
        const std::int64_t latest = s.number_at(keys::kLatest);
        if (latest < next) {
            throw CollectiveError("recovery: '" + keys::begun(next) + "' is set but '" +
                                  keys::kLatest + "' is " + std::to_string(latest));
        }
        return latest;
    });
}

std::string Recovery::replaced_ranks(std::int64_t from, std::int64_t to) {
    Impl& s = *impl_;
    return s.guarded("recovery: reading the ranks replaced", [&] {
        std::string out;
        for (std::int64_t g = from + 1; g <= to; ++g) {
            const std::string ranks = s.client->get(keys::begun(g), s.timeout);
            if (ranks.empty()) continue;
            out += (out.empty() ? "" : ",") + ranks;
        }
        return out;
    });
}

namespace {

/// Builds generation `joined`'s group; context moves there, keeping restart_count - generation.
JoinedGroup build(Recovery& recovery, RunContext& context, const InitOptions& options,
                  std::int64_t from, std::int64_t joined) {
    context.restart_count += static_cast<int>(joined - context.generation);
    context.generation = joined;
    JoinedGroup out;
    out.generation = joined;
    out.replaced = recovery.replaced_ranks(from, joined);
    out.group = init_process_group(context, options);
    return out;
}

}  // namespace

JoinedGroup join_process_group(Recovery& recovery, RunContext& context,
                               const InitOptions& options) {
    const std::int64_t from = context.generation - 1;
    return build(recovery, context, options, from, recovery.join(context.generation));
}

JoinedGroup reform_process_group(std::unique_ptr<ProcessGroup> broken, Recovery& recovery,
                                 RunContext& context, const InitOptions& options) {
    broken.reset();  // its collectives fail at once now; this frees the segment and sockets
    const std::int64_t from = context.generation;
    const std::int64_t next = recovery.await_next(from);
    return build(recovery, context, options, from, recovery.join(next));
}

}  // namespace ptrun::ddp
