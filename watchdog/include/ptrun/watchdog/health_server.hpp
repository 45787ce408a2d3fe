#pragma once
/// HealthServer: `GET /health` and `GET /status` over HTTP/1.1 on the agent's io_context
/// (http_exchange.hpp says what is answered), and `GET /stacks` when the agent gives a StacksFn
/// (answered when the agent has the workers' stacks, within io_timeout). Everything from the
/// network is hostile: a request head is at most max_request_bytes (431 beyond), a connection lives
/// at most io_timeout from accept to its last byte sent (then it is closed), at most
/// max_connections are open (at the limit a new client makes the server close the oldest connection
/// still waiting for its request, so idle clients cannot starve a liveness probe; when every slot
/// is answering, the new client is closed at once), every handler catches everything, and nothing
/// blocks: a client that sends or reads slowly costs one socket and one timer until its deadline.
/// One request per connection (Connection: close).
///
/// Use (launcher/agent/src/agent_watchdog.cpp): `--health-port PORT` (address: `--health-addr`,
/// loopback by default) makes the agent construct one HealthServer before the first attempt, with a
/// snapshot function that reads the workers' state and heartbeat records at request time.

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "ptrun/watchdog/health_status.hpp"

namespace ptrun::watchdog {

/// The endpoint cannot listen; the message names the address and port.
struct HealthServerError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct HealthServerOptions {
    std::string address = "127.0.0.1";  ///< a numeric IPv4 or IPv6 address
    std::uint16_t port = 0;             ///< 0: any free port (see port())
    /// >= 0: a listening TCP socket to serve on instead of opening address:port (a duplicate
    /// of it is served: the caller's stays open and is the caller's to close).
    int adopt_fd = -1;
    std::size_t max_connections = 16;
    std::size_t max_request_bytes = 8192;
    std::chrono::milliseconds io_timeout{std::chrono::seconds(5)};
};

class HealthServer {
  public:
    using SnapshotFn = std::function<StatusSnapshot()>;
    using ErrorFn = std::function<void(const std::string&)>;
    /// Collects the workers' stacks and calls `reply` with them (HTTP status and text) once,
    /// later, on the io_context's thread.
    using StacksReply = std::function<void(int status, std::string text)>;
    using StacksFn = std::function<void(StacksReply reply)>;
    /// GET /logs: answers the query string (log_lines.hpp, log_follow.hpp) through `reply`, at
    /// once or later (a long-poll) on the io_context's thread; a reply after the connection's
    /// io_timeout is dropped.
    using LogsFn = std::function<void(const std::string& query, StacksReply reply)>;

    /// Listens on options.address:port now and serves on `io` (its thread runs `snapshot` per
    /// request; a throwing snapshot answers 500). `on_error` hears of accept failures (it may be
    /// empty); `logs`, when given, answers GET /logs. Throws HealthServerError.
    HealthServer(boost::asio::io_context& io, HealthServerOptions options, SnapshotFn snapshot,
                 ErrorFn on_error = {}, StacksFn stacks = {}, LogsFn logs = {});
    /// Stops listening and closes every open connection (no handler runs afterwards).
    ~HealthServer();
    HealthServer(const HealthServer&) = delete;
    HealthServer& operator=(const HealthServer&) = delete;

    /// The port listened on (the chosen one when options.port was 0).
    std::uint16_t port() const;
    /// A duplicate of the listening socket (close-on-exec), -1 when it cannot be made: another
    /// server adopts it (HealthServerOptions::adopt_fd) and serves the same port, connections
    /// waiting in its backlog included.
    int duplicate_listener() const;
    /// Connections open now.
    std::size_t open_connections() const;

  private:
    struct State;
    class Connection;
    std::shared_ptr<State> state_;
};

}  // namespace ptrun::watchdog
