#include "transport.hpp"

#include <utility>
#include <array>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <limits>
#include <optional>

#include "asio_types.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::etcd::detail {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using boost::system::error_code;

namespace {

constexpr std::size_t kHeaderLimit = 16 * 1024;
constexpr std::size_t kReadChunk = 16 * 1024;
/// How long a cancelled operation may take to report back after its socket was closed.
constexpr std::chrono::milliseconds kDrainGrace{1'000};

/// One asynchronous step: its completion, written by the handler (which owns a reference).
struct Step {
    error_code ec;
    bool done = false;
};

std::string lower_first(std::string text) {
    if (!text.empty())
        text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    return text;
}

bool is_http_error(const error_code& ec) {
    return ec.category() == http::make_error_code(http::error::bad_version).category();
}

}  // namespace

std::string endpoint_text(const Endpoint& endpoint) {
    const bool v6 = endpoint.host.find(':') != std::string::npos;
    return (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" + std::to_string(endpoint.port);
}

// ---- Loop -------------------------------------------------------------------------------------

Loop::Loop() : impl_(std::make_unique<Impl>()) {}
Loop::~Loop() = default;

void Loop::stop() noexcept {
    stopped_ = true;
    impl_->io.stop();
}

// ---- Connection -------------------------------------------------------------------------------

struct Connection::Impl {
    using TlsStream = beast::ssl_stream<beast::tcp_stream>;

    Loop& loop;
    Endpoint endpoint;
    TlsContext* tls;
    std::size_t max_body;

    std::optional<beast::tcp_stream> plain;
    std::optional<TlsStream> secure;
    std::shared_ptr<Step> inflight;       ///< the step the stream may still run
    std::chrono::milliseconds budget{0};  ///< of the public call in progress, for messages
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    std::optional<http::response_parser<http::buffer_body>> parser;
    std::array<char, kReadChunk> chunk{};
    std::string pending;                 ///< stream bytes not yet returned as a message
    std::vector<tcp::endpoint> targets;  ///< of the connect in progress
    bool keep_alive = false;

    Impl(Loop& l, Endpoint e, TlsContext* t, std::size_t m)
        : loop(l), endpoint(std::move(e)), tls(t), max_body(m) {}

    net::io_context& io() { return loop.impl().io; }
    beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }
    bool open() const { return plain.has_value() || secure.has_value(); }

    template <typename F>
    void with_stream(F&& f) {
        if (secure) {
            f(*secure);
        } else {
            f(*plain);
        }
    }

    void start_budget(Clock::time_point deadline) {
        budget = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        if (budget.count() < 0) budget = std::chrono::milliseconds(0);
    }

    std::string where() const { return "etcd at " + endpoint_text(endpoint); }

    /// Runs the loop until `step` completes or `until` passes; false for the latter.
    bool run(const Step& step, Clock::time_point until) {
        auto& ctx = io();
        if (loop.stopped()) throw Interrupted();
        ctx.restart();
        if (loop.stopped()) throw Interrupted();
        while (!step.done) {
            if (ctx.run_one_until(until) == 0) break;
        }
        if (!step.done && loop.stopped()) throw Interrupted();
        return step.done;
    }

    /// Starts `start(handler)` on the stream with `deadline` and waits for it. A step that does
    /// not complete (the timer should have completed it) closes the connection.
    template <typename Start>
    error_code await(Start&& start, Clock::time_point deadline) {
        lowest().expires_at(deadline);
        auto step = std::make_shared<Step>();
        inflight = step;
        start([step](error_code ec, std::size_t) {
            step->ec = ec;
            step->done = true;
        });
        if (!run(*step, deadline + kDrainGrace)) {
            close();
            return beast::error::timeout;
        }
        inflight.reset();
        return step->ec;
    }

    [[noreturn]] void fail(const std::string& stage, const error_code& ec) {
        close();
        if (ec == beast::error::timeout) {
            throw TransportError("timed out after " + std::to_string(budget.count()) + " ms" +
                                     (stage.empty() ? "" : " " + stage),
                                 true);
        }
        if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
            ec == net::error::eof) {
            throw TransportError("closed the connection" + (stage.empty() ? "" : " " + stage));
        }
        if (is_http_error(ec)) {
            throw rdzv::StoreError(where() + " sent a malformed HTTP reply (" + stage +
                                   "): " + ec.message());
        }
        std::string reason = lower_first(ec.message()) + (stage.empty() ? "" : " (" + stage + ")");
        const auto text = ec.message();
        if (ec.category() == net::error::get_ssl_category() &&
            (text.find("alert bad certificate") != std::string::npos ||
             text.find("certificate required") != std::string::npos)) {
            reason += tls->impl().has_client_cert
                          ? ": the member did not accept the client certificate"
                          : ": the member wants a client certificate and none is configured";
        }
        throw TransportError(reason);
    }

    void close() noexcept {
        if (!open()) return;
        lowest().close();
        // Let a step cut short report back, so that nothing left in the loop refers to the stream.
        if (inflight && !inflight->done && !loop.stopped()) {
            try {
                run(*inflight, Clock::now() + kDrainGrace);
            } catch (...) {
            }
        }
        if (!inflight || inflight->done) {
            secure.reset();
            plain.reset();
        } else {
            // Stopped for good (interrupt()): the loop never runs again; the stream stays
            // allocated until the connection goes, which happens before its loop goes.
            keep_alive = false;
            return;
        }
        inflight.reset();
        keep_alive = false;
    }

    void connect(Clock::time_point deadline) {
        close();
        if (open()) throw Interrupted();  // a step cut short by interrupt() still holds it
        start_budget(deadline);
        buffer.clear();
        pending.clear();
        targets.clear();
        error_code ec;
        const auto address = net::ip::make_address(endpoint.host, ec);
        const bool by_name = static_cast<bool>(ec);
        if (!by_name) {
            targets.emplace_back(address, endpoint.port);
        } else {
            targets = resolve(deadline);
        }
        if (tls != nullptr) {
            secure.emplace(io(), tls->impl().ctx);
            if (by_name &&
                !SSL_set_tlsext_host_name(secure->native_handle(), endpoint.host.c_str())) {
                close();
                throw TransportError("cannot set the TLS server name '" + endpoint.host + "'");
            }
            secure->set_verify_mode(ssl::verify_peer);
            secure->set_verify_callback(ssl::host_name_verification(endpoint.host));
        } else {
            plain.emplace(io());
        }
        ec = await([&](auto handler) { lowest().async_connect(targets, handler_of(handler)); },
                   deadline);
        if (ec) fail("", ec);  // "connection refused" says it all
        if (secure) {
            ec = await(
                [&](auto handler) {
                    secure->async_handshake(ssl::stream_base::client,
                                            [handler](error_code e) { handler(e, 0); });
                },
                deadline);
            if (ec) fail("in the TLS handshake", ec);
        }
        keep_alive = true;
    }

    /// async_connect over a range hands back the endpoint, not a size.
    template <typename Handler>
    static auto handler_of(Handler handler) {
        return [handler](error_code ec, const tcp::endpoint&) { handler(ec, 0); };
    }

    std::vector<tcp::endpoint> resolve(Clock::time_point deadline) {
        struct Resolved {
            error_code ec;
            bool done = false;
            std::vector<tcp::endpoint> targets;
        };
        auto resolver = std::make_shared<tcp::resolver>(io());
        auto out = std::make_shared<Resolved>();
        resolver->async_resolve(endpoint.host, std::to_string(endpoint.port),
                                [resolver, out](error_code ec, tcp::resolver::results_type r) {
                                    out->ec = ec;
                                    for (const auto& e : r) out->targets.push_back(e.endpoint());
                                    out->done = true;
                                });
        auto& ctx = io();
        if (loop.stopped()) throw Interrupted();
        ctx.restart();
        while (!out->done && ctx.run_one_until(deadline) != 0) {
        }
        if (!out->done) {
            resolver->cancel();  // its handler owns what it writes; the loop may run it later
            if (loop.stopped()) throw Interrupted();
            throw TransportError("cannot resolve '" + endpoint.host + "' (timed out after " +
                                     std::to_string(budget.count()) + " ms)",
                                 true);
        }
        if (out->ec || out->targets.empty()) {
            throw TransportError("cannot resolve '" + endpoint.host +
                                 "': " + lower_first(out->ec.message()));
        }
        return out->targets;
    }

    void send(std::string_view target, std::string body, Clock::time_point deadline) {
        if (!open()) throw TransportError("not connected");
        request = {};
        request.method(http::verb::post);
        request.target(beast::string_view(target.data(), target.size()));
        request.version(11);
        request.set(http::field::host, endpoint_text(endpoint));
        request.set(http::field::content_type, "application/json");
        // Refuse at once (etcdserver: no leader) instead of waiting when the member has lost
        // its leader: what tells a cluster without quorum from a slow one.
        request.set("Grpc-Metadata-hasleader", "true");
        request.keep_alive(true);
        request.body() = std::move(body);
        request.prepare_payload();
        auto ec =
            await([&](auto h) { with_stream([&](auto& s) { http::async_write(s, request, h); }); },
                  deadline);
        if (ec) fail("sending the request", ec);
        parser.emplace();
        parser->header_limit(kHeaderLimit);
        // Bounded here, by max_body. Not boost::none: Beast 1.74 then refuses every body with a
        // Content-Length ("body limit exceeded": it compares the length with the empty optional).
        parser->body_limit(std::numeric_limits<std::uint64_t>::max());
        ec = await(
            [&](auto h) {
                with_stream([&](auto& s) { http::async_read_header(s, buffer, *parser, h); });
            },
            deadline);
        if (ec) fail("reading the reply", ec);
    }

    /// Reads some body bytes into `chunk`; returns how many, or nullopt at `deadline`.
    std::optional<std::size_t> read_some(Clock::time_point deadline) {
        auto& body = parser->get().body();
        body.data = chunk.data();
        body.size = chunk.size();
        auto ec = await(
            [&](auto h) {
                with_stream([&](auto& s) { http::async_read_some(s, buffer, *parser, h); });
            },
            deadline);
        if (ec == http::error::need_buffer) ec = {};
        if (ec == beast::error::timeout) return std::nullopt;
        if (ec) fail("reading the reply", ec);
        return chunk.size() - parser->get().body().size;
    }

    std::string too_large(const char* what) const {
        return where() + " sent " + what + " larger than max_response (" +
               std::to_string(max_body) + " bytes) to " + std::string(request.target());
    }

    std::string read_body(Clock::time_point deadline) {
        std::string out;
        while (!parser->is_done()) {
            auto n = read_some(deadline);
            if (!n) fail("reading the reply", beast::error::timeout);
            if (out.size() + *n > max_body) {
                close();
                throw rdzv::StoreError(too_large("a reply"));
            }
            out.append(chunk.data(), *n);
        }
        return out;
    }
};

Connection::Connection(Loop& loop, Endpoint endpoint, TlsContext* tls, std::size_t max_body)
    : endpoint_(endpoint),
      impl_(std::make_unique<Impl>(loop, std::move(endpoint), tls, max_body)) {}

Connection::~Connection() { impl_->close(); }

void Connection::connect(Clock::time_point deadline) { impl_->connect(deadline); }
bool Connection::is_open() const noexcept { return impl_->open(); }
bool Connection::reusable() const noexcept { return impl_->open() && impl_->keep_alive; }
void Connection::close() noexcept { impl_->close(); }

HttpReply Connection::post(std::string_view target, std::string body, Clock::time_point deadline) {
    impl_->start_budget(deadline);
    impl_->send(target, std::move(body), deadline);
    HttpReply reply;
    reply.status = impl_->parser->get().result_int();
    reply.body = impl_->read_body(deadline);
    impl_->keep_alive = impl_->parser->get().keep_alive();
    if (!impl_->keep_alive) impl_->close();
    return reply;
}

HttpReply Connection::post_stream(std::string_view target, std::string body,
                                  Clock::time_point deadline) {
    impl_->start_budget(deadline);
    impl_->keep_alive = false;
    impl_->send(target, std::move(body), deadline);
    HttpReply reply;
    reply.status = impl_->parser->get().result_int();
    if (reply.status != 200) reply.body = impl_->read_body(deadline);
    return reply;
}

StreamStep Connection::next_message(std::string& out, Clock::time_point deadline) {
    auto& d = *impl_;
    for (;;) {
        const auto newline = d.pending.find('\n');
        if (newline != std::string::npos) {
            out.assign(d.pending, 0, newline);
            d.pending.erase(0, newline + 1);
            if (out.find_first_not_of(" \t\r") == std::string::npos) continue;
            return StreamStep::Message;
        }
        if (d.pending.size() > d.max_body) {
            d.close();
            throw rdzv::StoreError(d.too_large("a stream message"));
        }
        if (!d.open()) return StreamStep::End;
        if (d.parser->is_done()) {
            d.close();
            if (d.pending.find_first_not_of(" \t\r") == std::string::npos) return StreamStep::End;
            out = std::move(d.pending);
            d.pending.clear();
            return StreamStep::Message;
        }
        const auto n = d.read_some(deadline);
        if (!n) {
            d.close();
            return StreamStep::Deadline;
        }
        d.pending.append(d.chunk.data(), *n);
    }
}

}  // namespace ptrun::etcd::detail
