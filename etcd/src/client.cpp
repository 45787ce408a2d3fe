#include "ptrun/etcd/client.hpp"

#include <algorithm>

#include "client_impl.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::etcd {

using detail::Json;

std::string prefix_end(const std::string& prefix) {
    std::string end = prefix;
    while (!end.empty()) {
        auto& last = end.back();
        if (static_cast<unsigned char>(last) < 0xFF) {
            last = static_cast<char>(static_cast<unsigned char>(last) + 1);
            return end;
        }
        end.pop_back();
    }
    return std::string(1, '\0');  // every key (etcd's "no end" for a prefix of 0xFF bytes)
}

Compare Compare::equal(std::string key, Target target, std::int64_t number) {
    Compare c;
    c.key = std::move(key);
    c.target = target;
    c.number = number;
    return c;
}

Compare Compare::value_equal(std::string key, std::string value) {
    Compare c;
    c.key = std::move(key);
    c.target = Target::Value;
    c.value = std::move(value);
    return c;
}

Op Op::put(std::string key, std::string value, std::int64_t lease) {
    Op op;
    op.kind = Kind::Put;
    op.key = std::move(key);
    op.value = std::move(value);
    op.lease = lease;
    return op;
}

Op Op::remove(std::string key, std::string range_end) {
    Op op;
    op.kind = Kind::Delete;
    op.key = std::move(key);
    op.range_end = std::move(range_end);
    return op;
}

Op Op::range(std::string key, std::string range_end, std::int64_t limit, bool keys_only) {
    Op op;
    op.kind = Kind::Range;
    op.key = std::move(key);
    op.range_end = std::move(range_end);
    op.limit = limit;
    op.keys_only = keys_only;
    return op;
}

// ---- Impl -------------------------------------------------------------------------------------

Client::Impl::Impl(ClientOptions o) : options(std::move(o)) {
    if (options.endpoints.empty()) throw rdzv::StoreError("etcd client: no endpoints given");
    for (const auto& e : options.endpoints) {
        if (e.host.empty() || e.port == 0) {
            throw rdzv::StoreError("etcd client: bad endpoint '" + detail::endpoint_text(e) + "'");
        }
    }
    if (options.io_timeout.count() <= 0) {
        throw rdzv::StoreError("etcd client: io_timeout must be positive, not " +
                               std::to_string(options.io_timeout.count()) + " ms");
    }
    if (options.max_response == 0) throw rdzv::StoreError("etcd client: max_response is 0");
    if (options.https) tls = std::make_unique<detail::TlsContext>(options);
}

Client::Impl::~Impl() { connection.reset(); }

std::vector<std::size_t> Client::Impl::order() const {
    const std::size_t first = preferred.load() % options.endpoints.size();
    std::vector<std::size_t> out{first};
    for (std::size_t i = 0; i < options.endpoints.size(); ++i) {
        if (i != first) out.push_back(i);
    }
    return out;
}

std::string Client::Impl::name(std::size_t index) const {
    return detail::endpoint_text(options.endpoints[index]);
}

detail::HttpReply Client::Impl::exchange(std::size_t index, std::string_view target,
                                         const std::string& body, bool stream) {
    auto fresh = [&] {
        connection.reset();
        connection = std::make_unique<detail::Connection>(loop, options.endpoints[index], tls.get(),
                                                          options.max_response);
        connected_to = index;
        connection->connect(bounded(detail::Clock::now() + options.io_timeout));
    };
    auto once = [&] {
        const auto deadline = bounded(detail::Clock::now() + options.io_timeout);
        if (!stream) return connection->post(target, body, deadline);
        auto reply = connection->post_stream(target, body, deadline);
        if (reply.status == 200) {
            // The first message is the answer; the stream is not read further.
            if (connection->next_message(reply.body, deadline) != detail::StreamStep::Message) {
                connection->close();
                throw detail::TransportError("no message on the stream " + std::string(target));
            }
        }
        connection->close();
        return reply;
    };
    const bool reused = connection && connected_to == index && connection->reusable();
    if (!reused) fresh();
    try {
        return once();
    } catch (const detail::TransportError& e) {
        // A kept-alive connection the member has closed since: one more try on a new one.
        if (!reused || e.timed_out()) throw;
    }
    fresh();
    return once();
}

void Client::Impl::check_live(std::string_view operation) {
    std::lock_guard lock(stop_mu);
    if (interrupted) detail::throw_interrupted(operation);
}

bool Client::Impl::pause_before_retry(detail::Clock::time_point give_up,
                                      std::string_view operation) {
    constexpr std::chrono::milliseconds kRetryPause{250};
    if (detail::Clock::now() + kRetryPause >= give_up) return false;
    std::unique_lock lock(stop_mu);
    stopped.wait_for(lock, kRetryPause, [this] { return interrupted; });
    if (interrupted) detail::throw_interrupted(operation);
    return true;
}

void Client::Impl::enlist(detail::Loop& l, std::string_view operation) {
    std::lock_guard lock(stop_mu);
    if (interrupted) detail::throw_interrupted(operation);
    watch_loops.push_back(&l);
}

void Client::Impl::discharge(detail::Loop& l) noexcept {
    std::lock_guard lock(stop_mu);
    watch_loops.erase(std::remove(watch_loops.begin(), watch_loops.end(), &l), watch_loops.end());
}

// ---- Client -----------------------------------------------------------------------------------

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;

RangeResult Client::range(const std::string& key, const std::string& range_end, std::int64_t limit,
                          bool by_creation) {
    return impl_->call("range", "/v3/kv/range",
                       detail::range_request(key, range_end, limit, by_creation),
                       [](const Json& j) { return detail::decode_range(j); });
}

std::int64_t Client::put(const std::string& key, const std::string& value, std::int64_t lease) {
    return impl_->call("put", "/v3/kv/put", detail::put_request(key, value, lease),
                       [](const Json& j) { return detail::header_revision(j); });
}

std::int64_t Client::delete_range(const std::string& key, const std::string& range_end) {
    return impl_->call("delete_range", "/v3/kv/deleterange", detail::delete_request(key, range_end),
                       [](const Json& j) { return detail::decode_deleted(j); });
}

TxnResult Client::txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                      const std::vector<Op>& failure) {
    return impl_->call("txn", "/v3/kv/txn", detail::txn_request(compares, success, failure),
                       [](const Json& j) { return detail::decode_txn(j); });
}

std::int64_t Client::lease_grant(std::int64_t ttl_seconds) {
    return impl_->call("lease_grant", "/v3/lease/grant", Json{{"TTL", std::to_string(ttl_seconds)}},
                       [](const Json& j) {
                           // etcd's lease IDs are positive, its TTLs too: anything else is no
                           // lease this node could keep alive.
                           const auto id = detail::int_field(j, "ID");
                           if (id <= 0) {
                               throw detail::Malformed("lease ID " + std::to_string(id) +
                                                       ": expected a positive ID");
                           }
                           const auto ttl = detail::int_field(j, "TTL");
                           if (ttl <= 0) {
                               throw detail::Malformed("lease TTL " + std::to_string(ttl) +
                                                       ": expected a positive number of seconds");
                           }
                           return id;
                       });
}

std::int64_t Client::lease_keepalive(std::int64_t id) {
    return impl_->call(
        "lease_keepalive", "/v3/lease/keepalive", Json{{"ID", std::to_string(id)}},
        [](const Json& j) {
            auto result = j.find("result");
            if (result == j.end() || !result->is_object()) {
                throw detail::Malformed("keepalive message without 'result'");
            }
            const auto ttl = detail::int_field(*result, "TTL");  // 0: the lease expired
            if (ttl < 0) {
                throw detail::Malformed("lease TTL " + std::to_string(ttl) +
                                        ": expected 0 or more seconds");
            }
            return ttl;
        },
        /*stream=*/true);
}

void Client::lease_revoke(std::int64_t id) {
    try {
        impl_->call("lease_revoke", "/v3/lease/revoke", Json{{"ID", std::to_string(id)}},
                    [](const Json& j) { return detail::header_revision(j); });
    } catch (const detail::Refused& e) {
        if (e.error().message.find("lease not found") == std::string::npos) throw;
    }
}

std::string Client::endpoints_text() const {
    std::string out;
    for (std::size_t i = 0; i < impl_->options.endpoints.size(); ++i) {
        out += (i == 0 ? "" : ", ") + impl_->name(i);
    }
    return out;
}

void Client::limit_until(std::optional<std::chrono::steady_clock::time_point> deadline) {
    std::lock_guard lock(impl_->mu);
    impl_->until = deadline;
}

void Client::interrupt() noexcept {
    std::lock_guard lock(impl_->stop_mu);
    impl_->interrupted = true;
    impl_->stopped.notify_all();
    impl_->loop.stop();
    for (auto* l : impl_->watch_loops) l->stop();
}

}  // namespace ptrun::etcd
