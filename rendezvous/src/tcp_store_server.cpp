#include "ptrun/rendezvous/tcp_store_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>
#include <vector>

#include "asio.hpp"
#include "buffer_budget.hpp"
#include "epoll_set.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_listener.hpp"
#include "server_connection.hpp"
#include "store_relay.hpp"
#include "store_state.hpp"

namespace ptrun::rdzv {

using boost::asio::ip::tcp;
using detail::Connection;
using detail::ConnId;

namespace {
constexpr int kMaxAcceptsPerWakeup = 256;            ///< then let other handlers run
constexpr std::size_t kReadBufferBytes = 64 * 1024;  ///< one recv, shared by every connection
constexpr int kKeepaliveProbes = 6;

/// "10.0.0.2:4242" / "[::1]:4242" for log lines, from the address accept4 filled in.
std::string describe_peer(const sockaddr_storage& address) {
    char host[INET6_ADDRSTRLEN] = "?";
    if (address.ss_family == AF_INET) {
        const auto& in = reinterpret_cast<const sockaddr_in&>(address);
        ::inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
        return std::string(host) + ":" + std::to_string(ntohs(in.sin_port));
    }
    if (address.ss_family == AF_INET6) {
        const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
        ::inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host);
        return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6.sin6_port));
    }
    return "?";
}
}  // namespace

class TcpStoreServer::Impl final : public detail::ConnectionHost {
  public:
    explicit Impl(TcpStoreServerOptions options);
    ~Impl() {
        try {
            stop();
        } catch (...) {  // already logged on the server thread
        }
    }

    std::uint16_t port() const noexcept { return port_; }
    int listening_fd() noexcept { return acceptor_.native_handle(); }
    /// Starts the server thread unless it runs or the server was stopped.
    void start();
    void clear() {
        if (!relay_) on_server([this] { state_.clear(); });
    }
    void clear_except(const std::string& prefix) {
        if (!relay_) on_server([&] { state_.clear_except(prefix); });
    }
    TcpStoreStats stats() {
        return on_server([this] {
            return TcpStoreStats{connections_.size(),
                                 budget_.used(),
                                 state_.stored_bytes(),
                                 state_.num_keys(),
                                 relay_ ? relay_->links_open() : 0,
                                 relay_ ? relay_->clients_waiting() : 0};
        });
    }
    void stop();

    void on_request(Connection& conn, detail::Request&& request) override;
    void on_closed(Connection& conn) noexcept override;
    bool make_room(Connection& conn, std::size_t more, const char* what) noexcept override;
    /// A connection in the EpollSet is ready.
    void on_ready(ConnId id, std::uint32_t events);

  private:
    /// Runs `task` on the server thread (here, if it is not running) and returns its result or
    /// rethrows its exception.
    template <typename Task>
    auto on_server(Task&& task) -> decltype(task());
    void listen();
    bool try_bind(const tcp::endpoint& endpoint, std::string& error);
    void adopt(int fd);
    void accept();
    /// Accepts what the backlog holds; false on an error other than "nothing left".
    bool accept_ready();
    void admit(int fd, const sockaddr_storage& address) noexcept;
    void set_keepalive(int fd) const noexcept;
    /// Says why accept failed: at once the first time, then at most every 10 s with how many
    /// failures it did not repeat (a store at its descriptor limit retries every 100 ms).
    void warn_accept_failed(const std::string& why, int error);
    /// Sends each message to its connection, if still open.
    void deliver(std::vector<detail::Outgoing>& out) noexcept;
    /// Sends what a relay step produced and closes the clients it dropped.
    void apply(detail::RelayEffects& fx) noexcept;
    /// After an exception escaped a handler: waits again for whatever it left unwatched.
    void recover() noexcept;
    void run() noexcept;

    boost::asio::io_context io_{1};  // first: destroyed after everything that uses it
    TcpStoreServerOptions options_;
    std::shared_ptr<spdlog::logger> log_;
    tcp::acceptor acceptor_{io_};
    boost::asio::steady_timer accept_retry_{io_};
    detail::EpollSet connection_set_{
        io_, [this](ConnId id, std::uint32_t events) { on_ready(id, events); }};
    detail::StoreState state_;
    detail::BufferBudget budget_;  // before connections_: they release into it when destroyed
    std::unique_ptr<char[]> read_buffer_;
    std::unordered_map<ConnId, std::shared_ptr<Connection>> connections_;
    std::unique_ptr<detail::StoreRelay> relay_;  ///< relay mode: forwards instead of state_
    bool accepting_ = false;                     ///< an accept wait or its retry timer is pending
    std::chrono::steady_clock::time_point accept_warned_{};
    std::size_t accept_failures_unsaid_ = 0;
    ConnId next_id_ = 1;
    std::uint16_t port_ = 0;
    std::mutex lifecycle_mu_;  ///< clear(), start() and stop() do not interleave
    std::thread thread_;
    bool stopped_ = false;  ///< under lifecycle_mu_: start() no longer starts the thread
    std::mutex error_mu_;
    std::exception_ptr error_;
};

TcpStoreServer::Impl::Impl(TcpStoreServerOptions options)
    : options_(std::move(options)),
      log_(options_.logger ? options_.logger
                           : std::make_shared<spdlog::logger>(
                                 "ptrun.rdzv", std::make_shared<spdlog::sinks::null_sink_mt>())),
      state_(options_.limits, options_.clock_key),
      budget_(options_.limits.max_buffered_bytes),
      read_buffer_(new char[kReadBufferBytes]) {
    if (options_.adopt_fd >= 0) {
        adopt(options_.adopt_fd);
    } else {
        listen();
    }
    if (!options_.relay.host.empty()) {
        relay_ = std::make_unique<detail::StoreRelay>(
            options_.relay, options_.limits, connection_set_, io_, *log_,
            [this](detail::RelayEffects& fx) { apply(fx); });
    }
    boost::system::error_code ec;
    port_ = acceptor_.local_endpoint(ec).port();
    log_->info("rdzv store: listening on port {}", port_);
    accept();
    connection_set_.start();
    if (options_.start_thread) start();
}

void TcpStoreServer::Impl::start() {
    std::lock_guard lifecycle(lifecycle_mu_);
    if (!thread_.joinable() && !stopped_) thread_ = std::thread([this] { run(); });
}

bool TcpStoreServer::Impl::try_bind(const tcp::endpoint& endpoint, std::string& error) {
    // Close-on-exec from the start (listen_tcp): worker processes forked by an embedding
    // launcher must not inherit the listener (it would outlive a stopped server and keep the
    // port bound).
    const int fd = listen_tcp(endpoint.address().to_string(), endpoint.port(), error);
    if (fd < 0) return false;
    boost::system::error_code ec;
    acceptor_.assign(endpoint.protocol(), fd, ec);
    if (ec) {
        ::close(fd);  // not the acceptor's
        error = ec.message();
        return false;
    }
    acceptor_.non_blocking(true, ec);  // it is: asio learns it
    if (!ec) return true;
    error = ec.message();
    boost::system::error_code ignored;
    acceptor_.close(ignored);  // the acceptor's now: closed once, by it
    return false;
}

void TcpStoreServer::Impl::listen() {
    const std::string where = options_.host + ":" + std::to_string(options_.port);
    std::vector<tcp::endpoint> endpoints;
    boost::system::error_code ec;
    const auto literal = boost::asio::ip::make_address(options_.host, ec);
    if (!ec) {  // an IP literal: no resolver (and no NSS modules in a static binary)
        endpoints.emplace_back(literal, options_.port);
    } else {
        tcp::resolver resolver(io_);
        auto results =
            resolver.resolve(options_.host, std::to_string(options_.port),
                             tcp::resolver::passive | tcp::resolver::numeric_service, ec);
        if (ec) throw StoreError("store server: cannot resolve " + where + ": " + ec.message());
        for (const auto& entry : results) endpoints.push_back(entry.endpoint());
    }
    std::string error = "no address";
    for (const auto& endpoint : endpoints) {
        if (try_bind(endpoint, error)) return;
    }
    if (options_.host == "::") {  // no IPv6 on this host: fall back like torch's libuv server
        log_->warn("rdzv store: cannot listen on {} ({}); falling back to 0.0.0.0", where, error);
        if (try_bind(tcp::endpoint(tcp::v4(), options_.port), error)) return;
    }
    throw StoreError(listen_failure(options_.host, options_.port, error));
}

void TcpStoreServer::Impl::adopt(int fd) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw StoreError("store server: adopt_fd " + std::to_string(fd) + ": " +
                         std::strerror(errno));
    }
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    boost::system::error_code ec;
    acceptor_.assign(address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
    if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
    if (!ec) acceptor_.non_blocking(true, ec);
    if (ec) {
        throw StoreError("store server: cannot listen on adopted fd " + std::to_string(fd) + ": " +
                         ec.message());
    }
}

void TcpStoreServer::Impl::accept() {
    acceptor_.async_wait(tcp::acceptor::wait_read, [this](const boost::system::error_code& ec) {
        accepting_ = false;
        if (ec == boost::asio::error::operation_aborted) return;
        if (!ec && accept_ready()) {
            accept();
            return;
        }
        // e.g. EMFILE: retry shortly instead of spinning on the error
        warn_accept_failed(ec ? ec.message() : std::string(std::strerror(errno)), errno);
        accept_retry_.expires_after(std::chrono::milliseconds(100));
        accept_retry_.async_wait([this](const boost::system::error_code& timer_ec) {
            accepting_ = false;
            if (!timer_ec) accept();
        });
        accepting_ = true;
    });
    accepting_ = true;
}

bool TcpStoreServer::Impl::accept_ready() {
    // accept4 rather than async_accept: the connection fds must be close-on-exec atomically,
    // since an embedding launcher forks workers on other threads.
    for (int i = 0; i < kMaxAcceptsPerWakeup; ++i) {
        sockaddr_storage address{};
        socklen_t length = sizeof address;
        const int fd = ::accept4(acceptor_.native_handle(), reinterpret_cast<sockaddr*>(&address),
                                 &length, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return false;
        }
        admit(fd, address);
    }
    return true;
}

void TcpStoreServer::Impl::admit(int fd, const sockaddr_storage& address) noexcept {
    std::shared_ptr<Connection> conn;
    try {
        if (connections_.size() >= options_.limits.max_connections) {
            ::close(fd);
            log_->warn(
                "rdzv store: refusing connection from {}: {} connections open "
                "(max_connections)",
                describe_peer(address), connections_.size());
            return;
        }
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        set_keepalive(fd);
        const ConnId id = next_id_++;
        try {
            conn = std::make_shared<Connection>(
                *this, connection_set_, fd, id, describe_peer(address), options_.limits, budget_,
                std::span<char>(read_buffer_.get(), kReadBufferBytes), *log_);
        } catch (...) {
            ::close(fd);  // not yet owned by a Connection
            throw;
        }
        connections_.emplace(id, conn);
        log_->debug("rdzv store: connection #{} from {}", id, conn->peer());
    } catch (const std::exception& e) {  // the fd is closed (by conn, if it was made)
        if (conn) conn->abort();
        try {
            log_->warn("rdzv store: cannot serve a connection: {}", e.what());
        } catch (...) {
        }
    }
}

void TcpStoreServer::Impl::warn_accept_failed(const std::string& why, int error) {
    const auto now = std::chrono::steady_clock::now();
    if (accept_warned_ != std::chrono::steady_clock::time_point{} &&
        now - accept_warned_ < std::chrono::seconds(10)) {
        ++accept_failures_unsaid_;
        return;
    }
    std::string text = "rdzv store: cannot accept a connection: " + why;
    if (error == EMFILE || error == ENFILE) {
        rlimit limit{};
        ::getrlimit(RLIMIT_NOFILE, &limit);
        text += " (" + std::to_string(connections_.size()) +
                " connections open; this process may hold " + std::to_string(limit.rlim_cur) +
                " descriptors, RLIMIT_NOFILE): clients wait in the listen backlog until one closes";
    }
    if (accept_failures_unsaid_ > 0) {
        text +=
            "; " + std::to_string(accept_failures_unsaid_) + " more failures since the last line";
    }
    text += "; retrying every 100 ms";
    log_->warn("{}", text);
    accept_warned_ = now;
    accept_failures_unsaid_ = 0;
}

void TcpStoreServer::Impl::set_keepalive(int fd) const noexcept {
    const auto idle = options_.keepalive.count();
    if (idle <= 0) return;
    const int on = 1;
    const int idle_s = static_cast<int>(std::min<long long>(idle, 32767));
    const int interval_s = std::max(1, idle_s / kKeepaliveProbes);
    ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &kKeepaliveProbes, sizeof kKeepaliveProbes);
}

void TcpStoreServer::Impl::on_ready(ConnId id, std::uint32_t events) {
    if (relay_ && (id & detail::StoreRelay::kLinkBit)) {
        detail::RelayEffects fx;
        relay_->on_link_ready(id, events, fx);
        apply(fx);
        return;
    }
    auto it = connections_.find(id);
    if (it == connections_.end()) return;  // closed earlier in this batch
    const auto conn = it->second;          // on_closed may drop the table's reference
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) conn->on_readable();
    if ((events & EPOLLOUT) && !conn->closed()) conn->on_writable();
}

void TcpStoreServer::Impl::deliver(std::vector<detail::Outgoing>& out) noexcept {
    for (auto& message : out) {
        auto it = connections_.find(message.to);
        if (it == connections_.end()) continue;
        auto target = it->second;  // send() may close it and drop the table's reference
        target->send(std::move(message));
    }
}

void TcpStoreServer::Impl::apply(detail::RelayEffects& fx) noexcept {
    deliver(fx.out);
    for (auto& [id, reason] : fx.drops) {
        auto it = connections_.find(id);
        if (it == connections_.end()) continue;
        auto target = it->second;
        target->close(reason, true);
    }
}

void TcpStoreServer::Impl::on_request(Connection& conn, detail::Request&& request) {
    if (relay_) {
        detail::RelayEffects fx;
        try {
            relay_->handle(conn.id(), std::move(request), fx);
        } catch (...) {
            apply(fx);
            throw;
        }
        apply(fx);
        return;
    }
    std::vector<detail::Outgoing> out;
    try {
        // A reply that has to be copied may take what the budget has left, no more.
        state_.handle(conn.id(), std::move(request), out, budget_.free());
    } catch (...) {
        deliver(out);  // wake-ups already taken out of the wait registry must not be lost
        throw;
    }
    deliver(out);
}

void TcpStoreServer::Impl::on_closed(Connection& conn) noexcept {
    if (relay_) relay_->disconnect(conn.id());
    state_.disconnect(conn.id());
    connections_.erase(conn.id());
}

bool TcpStoreServer::Impl::make_room(Connection& conn, std::size_t more,
                                     const char* what) noexcept {
    while (budget_.exceeded_by(more)) {
        // The connection holding the most goes: the one sending or not reading the most.
        std::shared_ptr<Connection> largest;
        std::size_t most = conn.held() + more;
        for (const auto& entry : connections_) {
            if (entry.second.get() != &conn && entry.second->held() > most) {
                largest = entry.second;
                most = largest->held();
            }
        }
        Connection& victim = largest ? *largest : conn;
        try {
            victim.reset("over the server's buffer budget (max_buffered_bytes = " +
                         std::to_string(budget_.max()) + "; " + std::to_string(budget_.used()) +
                         " in use, " + std::to_string(more) + " more wanted for " + what +
                         " by connection #" + std::to_string(conn.id()) +
                         ") and this connection holds the most: " +
                         std::to_string(victim.request_bytes()) + " bytes of partial request, " +
                         std::to_string(victim.reply_bytes()) + " of replies not yet read");
        } catch (...) {  // no memory for the message
            victim.reset("over the server's buffer budget (max_buffered_bytes)");
        }
        if (!largest) return false;
    }
    return true;
}

void TcpStoreServer::Impl::recover() noexcept {
    try {
        if (!accepting_) accept();
        connection_set_.rearm();
    } catch (...) {  // still no memory: the next exception comes back here
    }
}

void TcpStoreServer::Impl::run() noexcept {
    for (;;) {
        try {
            io_.run();
            return;
        } catch (...) {  // handlers catch their own errors; this is a bug: keep serving
            {
                std::lock_guard lock(error_mu_);
                if (!error_) error_ = std::current_exception();
            }
            log_->error("rdzv store: unexpected exception on the server thread");
            recover();
        }
    }
}

template <typename Task>
auto TcpStoreServer::Impl::on_server(Task&& task) -> decltype(task()) {
    std::lock_guard lifecycle(lifecycle_mu_);
    if (!thread_.joinable()) return task();
    std::packaged_task<decltype(task())()> job(std::forward<Task>(task));
    auto result = job.get_future();
    boost::asio::post(io_, [&job] { job(); });
    return result.get();
}

void TcpStoreServer::Impl::stop() {
    std::lock_guard lifecycle(lifecycle_mu_);
    if (!stopped_) {
        stopped_ = true;
        if (thread_.joinable()) {
            io_.stop();
            thread_.join();
        }
        // The server thread is gone (or never ran): tear down from here without racing it.
        boost::system::error_code ignored;
        acceptor_.close(ignored);
        accept_retry_.cancel();
        connection_set_.cancel();
        for (auto& entry : connections_) entry.second->abort();
        connections_.clear();
        relay_.reset();
        log_->info("rdzv store: stopped (port {})", port_);
    }
    std::exception_ptr error;
    {
        std::lock_guard lock(error_mu_);
        error = std::exchange(error_, nullptr);
    }
    if (error) std::rethrow_exception(error);
}

TcpStoreServer::TcpStoreServer(TcpStoreServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
TcpStoreServer::~TcpStoreServer() = default;
std::uint16_t TcpStoreServer::port() const noexcept { return impl_->port(); }
void TcpStoreServer::clear() { impl_->clear(); }
void TcpStoreServer::clear_except(std::string keep_prefix) { impl_->clear_except(keep_prefix); }
TcpStoreStats TcpStoreServer::stats() { return impl_->stats(); }
void TcpStoreServer::stop() { impl_->stop(); }
void TcpStoreServer::start() { impl_->start(); }
int TcpStoreServer::listening_fd() const noexcept { return impl_->listening_fd(); }

}  // namespace ptrun::rdzv
