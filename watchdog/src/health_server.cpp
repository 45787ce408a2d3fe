#include "ptrun/watchdog/health_server.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <list>

#include "ptrun/watchdog/http_exchange.hpp"

namespace ptrun::watchdog {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
/// After an accept error (EMFILE, ENFILE, ENOBUFS): wait before accepting again, not spin.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);
}  // namespace

struct HealthServer::State : std::enable_shared_from_this<HealthServer::State> {
    State(asio::io_context& io, HealthServerOptions o, SnapshotFn s, ErrorFn e, StacksFn st,
          LogsFn lg)
        : context(io),
          acceptor(io),
          backoff(io),
          options(std::move(o)),
          snapshot(std::move(s)),
          on_error(std::move(e)),
          stacks(std::move(st)),
          logs(std::move(lg)) {}

    void accept();
    /// At the connection limit: closes the connection accepted first among those still waiting
    /// for their request (in accept order), making room for a client that asks at once.
    void close_oldest_idle();
    void report(const std::string& what) {
        if (!on_error) return;
        try {
            on_error(what);
        } catch (...) {
        }
    }

    asio::io_context& context;
    tcp::acceptor acceptor;
    asio::steady_timer backoff;
    HealthServerOptions options;
    SnapshotFn snapshot;
    ErrorFn on_error;
    StacksFn stacks;
    LogsFn logs;
    std::list<std::weak_ptr<HealthServer::Connection>> connections;
    bool stopped = false;
};

/// One accepted client: read one request head (bounded), answer, close; all within a deadline.
class HealthServer::Connection : public std::enable_shared_from_this<HealthServer::Connection> {
  public:
    Connection(tcp::socket socket, std::shared_ptr<HealthServer::State> server)
        : socket_(std::move(socket)),
          deadline_(socket_.get_executor()),
          server_(std::move(server)) {}

    void start() {
        deadline_.expires_after(server_->options.io_timeout);
        deadline_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
            if (ec) return;
            if (auto self = weak.lock()) self->close();
        });
        read();
    }

    /// Still waiting for its request head (not answering): what a full server closes first.
    bool idle() const { return !answering_; }

    void close() {
        boost::system::error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_both, ignored);
        socket_.close(ignored);
        deadline_.cancel();
    }

  private:
    void read() {
        socket_.async_read_some(
            asio::buffer(buffer_),
            [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                if (ec || self->server_->stopped) return self->close();
                self->received_.append(self->buffer_.data(), n);
                self->on_data();
            });
    }

    void on_data() {
        const std::size_t limit = server_->options.max_request_bytes;
        const auto end = request_head_end(received_);
        if (!end) {
            if (received_.size() >= limit) {
                return respond(text_response(
                    431, "request head larger than " + std::to_string(limit) + " bytes"));
            }
            return read();
        }
        if (*end > limit) {
            return respond(
                text_response(431, "request head larger than " + std::to_string(limit) + " bytes"));
        }
        const ParsedRequest parsed =
            parse_request_head(std::string_view(received_).substr(0, *end));
        if (!parsed.request) return respond(parsed.error);
        if (parsed.request->path == "/stacks" && server_->stacks &&
            (parsed.request->method == "GET" || parsed.request->method == "HEAD")) {
            return ask_for_stacks(parsed.request->method == "HEAD");
        }
        if (parsed.request->path == "/logs" && server_->logs &&
            (parsed.request->method == "GET" || parsed.request->method == "HEAD")) {
            return ask_for_logs(parsed.query, parsed.request->method == "HEAD");
        }
        HttpResponse response;
        try {
            response = answer(*parsed.request, server_->snapshot());
        } catch (const std::exception& e) {
            response = text_response(500, std::string("internal error: ") + e.what());
        } catch (...) {
            response = text_response(500, "internal error");
        }
        respond(response);
    }

    /// Answers once the agent has the stacks (or the deadline closes the connection first).
    void ask_for_stacks(bool head) {
        answering_ = true;
        try {
            // The reply holds the connection: until then nothing else does (its deadline timer
            // still closes it at io_timeout).
            server_->stacks([self = shared_from_this(), head](int status, std::string text) {
                if (!self->socket_.is_open() || self->server_->stopped) return;
                auto response = text_response(status, std::move(text));
                response.head_only = head;
                self->respond(response);
            });
        } catch (const std::exception& e) {
            respond(text_response(500, std::string("internal error: ") + e.what()));
        }
    }

    /// Answers when the agent replies: at once, or when a long-poll ends (log_follow.hpp).
    void ask_for_logs(const std::string& query, bool head) {
        answering_ = true;
        try {
            server_->logs(query, [self = shared_from_this(), head](int status, std::string text) {
                if (!self->socket_.is_open() || self->server_->stopped || !self->out_.empty()) {
                    return;
                }
                HttpResponse response = text_response(status, "");
                response.body = std::move(text);
                response.head_only = head;
                self->respond(response);
            });
        } catch (const std::exception& e) {
            respond(text_response(500, std::string("internal error: ") + e.what()));
        }
    }

    void respond(const HttpResponse& response) {
        answering_ = true;
        out_ = serialize(response);
        asio::async_write(
            socket_, asio::buffer(out_),
            [self = shared_from_this()](boost::system::error_code, std::size_t) { self->close(); });
    }

    tcp::socket socket_;
    asio::steady_timer deadline_;
    std::shared_ptr<HealthServer::State> server_;
    std::array<char, 2048> buffer_{};
    std::string received_;
    std::string out_;
    bool answering_ = false;
};

void HealthServer::State::close_oldest_idle() {
    for (auto it = connections.begin(); it != connections.end(); ++it) {
        auto c = it->lock();
        if (!c || !c->idle()) continue;
        c->close();
        connections.erase(it);
        return;
    }
}

void HealthServer::State::accept() {
    acceptor.async_accept(
        [self = shared_from_this()](boost::system::error_code ec, tcp::socket socket) {
            if (self->stopped || ec == asio::error::operation_aborted) return;
            if (ec) {
                self->report("health endpoint: accept failed: " + ec.message());
                self->backoff.expires_after(kAcceptBackoff);
                self->backoff.async_wait([self](boost::system::error_code wait_ec) {
                    if (!wait_ec && !self->stopped) self->accept();
                });
                return;
            }
            try {
                self->connections.remove_if([](const auto& w) { return w.expired(); });
                if (self->connections.size() >= self->options.max_connections) {
                    self->close_oldest_idle();  // a probe is answered whatever idle clients hold
                }
                if (self->connections.size() >= self->options.max_connections) {
                    boost::system::error_code ignored;
                    socket.close(ignored);  // every slot is answering: refused at once
                } else {
                    auto c = std::make_shared<Connection>(std::move(socket), self);
                    self->connections.push_back(c);
                    c->start();
                }
            } catch (const std::exception& e) {
                self->report(std::string("health endpoint: ") + e.what());
            }
            self->accept();
        });
}

HealthServer::HealthServer(asio::io_context& io, HealthServerOptions options, SnapshotFn snapshot,
                           ErrorFn on_error, StacksFn stacks, LogsFn logs)
    : state_(std::make_shared<State>(io, std::move(options), std::move(snapshot),
                                     std::move(on_error), std::move(stacks), std::move(logs))) {
    const auto& o = state_->options;
    const std::string where = o.address + " port " + std::to_string(o.port);
    boost::system::error_code ec;
    if (o.adopt_fd >= 0) {
        sockaddr_storage bound{};
        socklen_t size = sizeof bound;
        const int fd = ::fcntl(o.adopt_fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) != 0) {
            const int err = errno;
            if (fd >= 0) ::close(fd);
            throw HealthServerError("health endpoint: cannot take over its socket: " +
                                    std::string(std::strerror(err)));
        }
        state_->acceptor.assign(bound.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
        if (ec) {
            ::close(fd);
            throw HealthServerError("health endpoint: cannot take over its socket: " +
                                    ec.message());
        }
        state_->accept();
        return;
    }
    const auto address = asio::ip::make_address(o.address, ec);
    if (ec) throw HealthServerError("health endpoint: '" + o.address + "' is not an IP address");
    const tcp::endpoint endpoint(address, o.port);
    auto& acceptor = state_->acceptor;
    if (acceptor.open(endpoint.protocol(), ec) ||
        acceptor.set_option(tcp::acceptor::reuse_address(true), ec) ||
        acceptor.bind(endpoint, ec) ||
        acceptor.listen(asio::socket_base::max_listen_connections, ec)) {
        throw HealthServerError("health endpoint: cannot listen on " + where + ": " + ec.message());
    }
    state_->accept();
}

HealthServer::~HealthServer() {
    state_->stopped = true;
    boost::system::error_code ignored;
    state_->acceptor.close(ignored);
    state_->backoff.cancel();
    for (auto& w : state_->connections) {
        if (auto c = w.lock()) c->close();
    }
}

std::uint16_t HealthServer::port() const {
    boost::system::error_code ec;
    return state_->acceptor.local_endpoint(ec).port();
}

int HealthServer::duplicate_listener() const {
    return ::fcntl(state_->acceptor.native_handle(), F_DUPFD_CLOEXEC, 0);
}

std::size_t HealthServer::open_connections() const {
    state_->connections.remove_if([](const auto& w) { return w.expired(); });
    return state_->connections.size();
}

}  // namespace ptrun::watchdog
