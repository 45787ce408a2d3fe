#include "ptrun/rendezvous/tcp_store_client.hpp"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "protocol.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "socket_io.hpp"

namespace ptrun::rdzv {

using detail::Clock;
using detail::Deadline;
using detail::Op;
using detail::Request;
using Keys = std::vector<std::string>;

namespace {

/// A reply did not arrive within io_timeout; the connection is out of step and is dropped.
struct ReplyTimeout {};

constexpr std::uint64_t kMaxReplyBytes = 1ull << 30;

Request make(Op op, Keys keys = {}, Keys values = {}, std::int64_t number = 0) {
    Request r;
    r.op = op;
    r.keys = std::move(keys);
    r.values = std::move(values);
    r.number = number;
    return r;
}

Duration since(Clock::time_point start) {
    return std::chrono::duration_cast<Duration>(Clock::now() - start);
}

}  // namespace

class TcpStoreClient::Impl {
  public:
    explicit Impl(TcpStoreClientOptions options)
        : options_(std::move(options)), nonce_(static_cast<std::uint32_t>(::getpid())) {
        connect();
    }

    /// Runs `body` under the client mutex on a live connection; a broken or out-of-step
    /// connection is dropped (the next call reconnects) and reported as a typed error.
    template <typename Body>
    auto call(std::string_view operation, const Keys& keys, Body&& body) {
        std::lock_guard lock(mu_);
        if (interrupted_)
            throw ConnectionLost(std::string(operation) + " on " + endpoint() +
                                 ": client interrupted");
        if (!fd_) connect();
        try {
            return body();
        } catch (const ConnectionLost& e) {
            drop();
            if (interrupted_) {
                throw ConnectionLost(std::string(operation) + " on " + endpoint() +
                                     ": client interrupted");
            }
            throw ConnectionLost(std::string(operation) + " " + describe_keys(keys) + " on " +
                                 endpoint() + ": " + e.what());
        } catch (const ReplyTimeout&) {
            drop();
            throw StoreNoReply(std::string(operation) + " (no reply from " + endpoint() + ")", keys,
                               options_.io_timeout);
        }
    }

    void require_modern(std::string_view operation) const {
        if (options_.dialect != Dialect::Modern) {
            throw StoreError(std::string(operation) +
                             " needs the modern dialect (a PyTorch 2.2+ compatible server)");
        }
    }

    void send(const Request& r) {
        detail::send_all(fd_, detail::encode_request(options_.dialect, r), io_deadline());
    }
    /// `r` `count` times in one write: a pipelined batch whose replies follow in order.
    void send_repeated(const Request& r, std::size_t count) {
        const std::string one = detail::encode_request(options_.dialect, r);
        std::string all;
        all.reserve(one.size() * count);
        for (std::size_t i = 0; i < count; ++i) all += one;
        detail::send_all(fd_, all, io_deadline());
    }
    void read(char* out, std::size_t n) {
        if (!detail::recv_exact(fd_, out, n, io_deadline())) throw ReplyTimeout{};
    }
    std::uint8_t read_u8() {
        char c = 0;
        read(&c, 1);
        return static_cast<std::uint8_t>(c);
    }
    template <typename T>
    T read_raw() {
        char b[sizeof(T)];
        read(b, sizeof b);
        return detail::load_raw<T>(b);
    }
    std::string read_bytes() {
        const auto n = read_raw<std::uint64_t>();
        if (n > kMaxReplyBytes) {
            throw ConnectionLost("implausible reply length " + std::to_string(n));
        }
        std::string s(static_cast<std::size_t>(n), '\0');
        if (n > 0) read(s.data(), s.size());
        return s;
    }

    /// After WAIT/BARRIER was sent at `start`: returns once STOP_WAITING arrives, or throws
    /// StoreTimeout after `timeout` (modern: after CANCEL_WAIT settled the stream).
    void await_stop_waiting(std::string_view operation, const Keys& keys, Duration timeout,
                            Clock::time_point start) {
        const bool legacy = options_.dialect == Dialect::Legacy;
        const auto ready =
            detail::wait_readable(fd_, legacy ? -1 : wake_fd_.load(), start + timeout);
        char c = 0;
        if (ready == detail::Readable::Ready && detail::recv_exact(fd_, &c, 1, start + timeout)) {
            expect_stop_waiting(static_cast<std::uint8_t>(c), operation);
            return;
        }
        const Duration waited = since(start);  // the time is up, or wake() cut the wait short
        if (legacy) {
            // 1.13 servers have no CANCEL_WAIT; a late STOP_WAITING would corrupt the next
            // reply, so this connection is retired.
            drop();
            throw StoreTimeout(operation, keys, waited);
        }
        send(make(Op::CancelWait));
        std::uint8_t reply = read_u8();
        if (reply == static_cast<std::uint8_t>(detail::WaitResponse::WaitCanceled)) {
            if (ready == detail::Readable::Woken) throw StoreWoken(operation, keys, waited);
            throw StoreTimeout(operation, keys, waited);
        }
        // STOP_WAITING raced our CANCEL_WAIT: the keys are there; WAIT_CANCELED follows.
        expect_stop_waiting(reply, operation);
        reply = read_u8();
        if (reply != static_cast<std::uint8_t>(detail::WaitResponse::WaitCanceled)) {
            throw ConnectionLost("expected WAIT_CANCELED after STOP_WAITING, got " +
                                 std::to_string(reply));
        }
    }

    void wait_for(std::string_view operation, const Keys& keys, Duration timeout) {
        const auto start = Clock::now();
        send(make(Op::Wait, keys));
        await_stop_waiting(operation, keys, timeout, start);
    }

    void ping() {
        Request r = make(Op::Ping);
        r.word = ++nonce_;
        send(r);
        const auto echo = read_raw<std::uint32_t>();
        if (echo != r.word) throw ConnectionLost("PING echoed a different nonce");
    }

    const TcpStoreClientOptions& options() const noexcept { return options_; }

    /// Makes the eventfd wake() writes at the first call (most clients never need one).
    bool wakeable() noexcept {
        if (options_.dialect != Dialect::Modern) return false;
        std::lock_guard lock(wake_mu_);
        if (wake_fd_.load() < 0) wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        return wake_fd_.load() >= 0;
    }
    void wake() noexcept {
        if (const int fd = wake_fd_.load(); fd >= 0) ::eventfd_write(fd, 1);
    }
    ~Impl() {
        if (wake_fd_.load() >= 0) ::close(wake_fd_.load());
    }

    /// Unblocks a call in progress on another thread and fails every later call.
    void interrupt() noexcept {
        interrupted_ = true;
        std::lock_guard lock(fd_mu_);
        if (fd_) ::shutdown(fd_.get(), SHUT_RDWR);
    }

  private:
    static void expect_stop_waiting(std::uint8_t reply, std::string_view operation) {
        if (reply != static_cast<std::uint8_t>(detail::WaitResponse::StopWaiting)) {
            throw ConnectionLost("unexpected reply " + std::to_string(reply) + " to " +
                                 std::string(operation) + "'s WAIT");
        }
    }
    Deadline io_deadline() const { return Clock::now() + options_.io_timeout; }
    std::string endpoint() const { return options_.host + ":" + std::to_string(options_.port); }

    /// Connects (VALIDATE + PING on modern), retrying with backoff until connect_timeout.
    void connect() {
        const auto start = Clock::now();
        const Deadline deadline = start + options_.connect_timeout;
        Backoff backoff(options_.backoff);
        std::string last_error;
        for (int attempt = 1;; ++attempt) {
            bool tcp_connected = false;
            try {
                adopt(detail::connect_tcp(options_.host, options_.port, deadline));
                tcp_connected = true;
                if (options_.dialect == Dialect::Modern) handshake(deadline);
                return;
            } catch (const ConnectionLost& e) {
                last_error = e.what();
            } catch (const ReplyTimeout&) {
                last_error = "no PING reply";
            }
            if (tcp_connected) {
                last_error +=
                    " during the VALIDATE/PING handshake (a PyTorch 1.13-2.1 server "
                    "needs Dialect::Legacy)";
            }
            drop();
            const auto now = Clock::now();
            if (now >= deadline) {
                throw ConnectionLost("cannot connect to the store at " + endpoint() + " within " +
                                     std::to_string(since(start).count()) + " ms (" +
                                     std::to_string(attempt) + " attempts): " + last_error);
            }
            std::this_thread::sleep_for(std::min<Clock::duration>(backoff.next(), deadline - now));
        }
    }

    void handshake(Deadline deadline) {
        Request validate = make(Op::Validate);
        validate.word = detail::kValidationMagic;
        Request ping = make(Op::Ping);
        ping.word = ++nonce_;
        const Deadline d = std::min(deadline, io_deadline());
        detail::send_all(fd_,
                         detail::encode_request(Dialect::Modern, validate) +
                             detail::encode_request(Dialect::Modern, ping),
                         d);
        char echo[4];
        if (!detail::recv_exact(fd_, echo, sizeof echo, d)) throw ReplyTimeout{};
        if (detail::load_raw<std::uint32_t>(echo) != ping.word) {
            throw ConnectionLost("PING echoed a different nonce");
        }
    }

    /// fd_ changes only under fd_mu_, so interrupt() never shuts down a recycled descriptor.
    void adopt(detail::Fd fd) {
        std::lock_guard lock(fd_mu_);
        fd_ = std::move(fd);
        if (interrupted_) ::shutdown(fd_.get(), SHUT_RDWR);
    }
    void drop() noexcept {
        std::lock_guard lock(fd_mu_);
        fd_.reset();
    }

    TcpStoreClientOptions options_;
    std::mutex mu_;
    std::mutex fd_mu_;
    std::atomic<bool> interrupted_{false};
    detail::Fd fd_;
    /// An eventfd, made by wakeable(), -1 before: wake() writes it, a wait polls it beside fd_.
    std::atomic<int> wake_fd_{-1};
    std::mutex wake_mu_;
    std::uint32_t nonce_;
};

TcpStoreClient::TcpStoreClient(TcpStoreClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
TcpStoreClient::~TcpStoreClient() = default;

const TcpStoreClientOptions& TcpStoreClient::options() const noexcept { return impl_->options(); }
void TcpStoreClient::interrupt() noexcept { impl_->interrupt(); }
bool TcpStoreClient::wakeable() const noexcept { return impl_->wakeable(); }
void TcpStoreClient::wake() noexcept { impl_->wake(); }

void TcpStoreClient::set(std::string_view key, std::string_view value) {
    const Keys keys{std::string(key)};
    impl_->call("set", keys, [&] { impl_->send(make(Op::Set, keys, {std::string(value)})); });
}

std::string TcpStoreClient::get(std::string_view key, Duration timeout) {
    const Keys keys{std::string(key)};
    return impl_->call("get", keys, [&] {
        impl_->wait_for("get", keys, timeout);
        impl_->send(make(Op::Get, keys));
        return impl_->read_bytes();
    });
}

std::int64_t TcpStoreClient::add(std::string_view key, std::int64_t delta) {
    const Keys keys{std::string(key)};
    return impl_->call("add", keys, [&] {
        impl_->send(make(Op::Add, keys, {}, delta));
        return impl_->read_raw<std::int64_t>();
    });
}

std::string TcpStoreClient::compare_set(std::string_view key, std::string_view expected,
                                        std::string_view desired) {
    const Keys keys{std::string(key)};
    return impl_->call("compare_set", keys, [&] {
        impl_->send(make(Op::CompareSet, keys, {std::string(expected), std::string(desired)}));
        return impl_->read_bytes();
    });
}

bool TcpStoreClient::check(const std::vector<std::string>& keys) {
    return impl_->call("check", keys, [&] {
        impl_->send(make(Op::Check, keys));
        const std::uint8_t reply = impl_->read_u8();
        if (reply > 1) throw ConnectionLost("unexpected CHECK reply " + std::to_string(reply));
        return reply == static_cast<std::uint8_t>(detail::CheckResponse::Ready);
    });
}

void TcpStoreClient::wait(const std::vector<std::string>& keys, Duration timeout) {
    impl_->call("wait", keys, [&] { impl_->wait_for("wait", keys, timeout); });
}

bool TcpStoreClient::delete_key(std::string_view key) {
    const Keys keys{std::string(key)};
    return impl_->call("delete_key", keys, [&] {
        impl_->send(make(Op::DeleteKey, keys));
        return impl_->read_raw<std::int64_t>() > 0;
    });
}

std::int64_t TcpStoreClient::num_keys() {
    return impl_->call("num_keys", {}, [&] {
        impl_->send(make(Op::NumKeys));
        return impl_->read_raw<std::int64_t>();
    });
}

void TcpStoreClient::append(std::string_view key, std::string_view value) {
    const Keys keys{std::string(key)};
    impl_->call("append", keys, [&] { impl_->send(make(Op::Append, keys, {std::string(value)})); });
}

std::vector<std::string> TcpStoreClient::multi_get(const std::vector<std::string>& keys,
                                                   Duration timeout) {
    return impl_->call("multi_get", keys, [&] {
        impl_->wait_for("multi_get", keys, timeout);
        std::vector<std::string> values;
        values.reserve(keys.size());
        if (impl_->options().dialect == Dialect::Modern) {
            impl_->send(make(Op::MultiGet, keys));
            for (std::size_t i = 0; i < keys.size(); ++i) values.push_back(impl_->read_bytes());
        } else {  // 1.13 has no MULTI_GET
            for (const auto& k : keys) {
                impl_->send(make(Op::Get, {k}));
                values.push_back(impl_->read_bytes());
            }
        }
        return values;
    });
}

void TcpStoreClient::multi_set(const std::vector<std::string>& keys,
                               const std::vector<std::string>& values) {
    if (keys.size() != values.size()) {
        throw StoreError("multi_set: " + std::to_string(keys.size()) + " keys but " +
                         std::to_string(values.size()) + " values");
    }
    impl_->call("multi_set", keys, [&] {
        if (impl_->options().dialect == Dialect::Modern) {
            impl_->send(make(Op::MultiSet, keys, values));
        } else {  // 1.13 has no MULTI_SET
            for (std::size_t i = 0; i < keys.size(); ++i) {
                impl_->send(make(Op::Set, {keys[i]}, {values[i]}));
            }
        }
    });
}

void TcpStoreClient::queue_push(std::string_view key, std::string_view value) {
    impl_->require_modern("queue_push");
    const Keys keys{std::string(key)};
    impl_->call("queue_push", keys,
                [&] { impl_->send(make(Op::QueuePush, keys, {std::string(value)})); });
}

std::string TcpStoreClient::queue_pop(std::string_view key, Duration timeout) {
    impl_->require_modern("queue_pop");
    const Keys keys{std::string(key)};
    return impl_->call("queue_pop", keys, [&] {
        const auto start = Clock::now();
        for (;;) {  // another consumer may win the element between our WAIT and QUEUE_POP
            const Duration left = std::max(Duration::zero(), timeout - since(start));
            impl_->wait_for("queue_pop", keys, left);
            impl_->send(make(Op::QueuePop, keys));
            if (impl_->read_raw<std::int64_t>() > 0) return impl_->read_bytes();
            if (since(start) >= timeout) throw StoreTimeout("queue_pop", keys, since(start));
        }
    });
}

std::vector<std::string> TcpStoreClient::queue_pop_batch(std::string_view key, std::size_t max,
                                                         Duration timeout) {
    impl_->require_modern("queue_pop_batch");
    const Keys keys{std::string(key)};
    return impl_->call("queue_pop_batch", keys, [&] {
        impl_->wait_for("queue_pop_batch", keys, timeout);
        impl_->send(make(Op::QueueLen, keys));
        const auto len = impl_->read_raw<std::int64_t>();
        const std::size_t count = std::clamp<std::size_t>(
            len > 0 ? static_cast<std::size_t>(len) : 1, 1, std::max<std::size_t>(max, 1));
        impl_->send_repeated(make(Op::QueuePop, keys), count);
        std::vector<std::string> values;
        values.reserve(count);
        for (std::size_t i = 0; i < count; ++i) {
            if (impl_->read_raw<std::int64_t>() > 0) values.push_back(impl_->read_bytes());
        }
        return values;
    });
}

std::int64_t TcpStoreClient::queue_len(std::string_view key) {
    impl_->require_modern("queue_len");
    const Keys keys{std::string(key)};
    return impl_->call("queue_len", keys, [&] {
        impl_->send(make(Op::QueueLen, keys));
        return impl_->read_raw<std::int64_t>();
    });
}

std::vector<std::string> TcpStoreClient::list_keys() {
    impl_->require_modern("list_keys");
    return impl_->call("list_keys", {}, [&] {
        impl_->send(make(Op::ListKeys));
        const auto n = impl_->read_raw<std::int64_t>();
        if (n < 0 || static_cast<std::uint64_t>(n) > kMaxReplyBytes / 8) {
            throw ConnectionLost("implausible LIST_KEYS count " + std::to_string(n));
        }
        std::vector<std::string> keys;
        keys.reserve(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) keys.push_back(impl_->read_bytes());
        return keys;
    });
}

void TcpStoreClient::barrier(std::string_view key, std::int64_t world_size, Duration timeout) {
    impl_->require_modern("barrier");
    const Keys keys{std::string(key)};
    impl_->call("barrier", keys, [&] {
        const auto start = Clock::now();
        impl_->send(make(Op::Barrier, keys, {}, world_size));
        impl_->await_stop_waiting("barrier", keys, timeout, start);
    });
}

void TcpStoreClient::ping() {
    impl_->require_modern("ping");
    impl_->call("ping", {}, [&] { impl_->ping(); });
}

}  // namespace ptrun::rdzv
