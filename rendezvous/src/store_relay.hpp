#pragma once
/// StoreRelay: what a TcpStoreServer in relay mode does with its clients' requests instead of
/// storing them: it forwards them to the real store (the head) over a few connections, so that
/// the head holds a handful of connections per node instead of one per rank.
///
/// - Each client's requests go, in order, over one of `links` pipelined connections (client id
///   modulo links); one request per client is forwarded at a time (torch's clients are
///   synchronous), so replies come back in order and a client's writes are applied before its
///   next request on the same connection.
/// - ADDs of one key and GETs of one key that arrive while one is in flight on the same link
///   wait for it, then go as one ADD (of the sum; each client gets its share of the result) or
///   one GET (every client gets the reply): 7,000 ranks' barrier ADD becomes a few.
/// - WAITs on the same keys share one WAIT on a wait connection of their own (a pool); a
///   client that sends anything while waiting gives its wait up (spec §2.4.7), CANCEL_WAIT is
///   answered here. BARRIER takes a wait connection for itself. WATCH_KEY is not relayed.
/// A failed head connection closes the clients that had a request on it.

#include <spdlog/fwd.h>

#include <utility>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "asio.hpp"
#include "epoll_set.hpp"
#include "protocol.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"
#include "reply.hpp"
#include "reply_parser.hpp"

namespace ptrun::rdzv::detail {

/// What a relay step asks of the server: bytes for clients, clients to close (with why).
struct RelayEffects {
    std::vector<Outgoing> out;
    std::vector<std::pair<ConnId, std::string>> drops;
};

class StoreRelay {
  public:
    /// Applies effects produced outside a call from the server (a posted flush).
    using Apply = std::function<void(RelayEffects&)>;
    /// EpollSet ids of the relay's own connections carry this bit (clients' ids never do).
    static constexpr std::uint64_t kLinkBit = std::uint64_t{1} << 62;

    /// Connects `options.links` connections to the head at once; throws StoreError (naming
    /// host:port) if it cannot. Later connections are made as needed.
    StoreRelay(const TcpStoreRelay& options, const TcpStoreLimits& limits, EpollSet& set,
               boost::asio::io_context& io, spdlog::logger& log, Apply apply);
    ~StoreRelay();
    StoreRelay(const StoreRelay&) = delete;
    StoreRelay& operator=(const StoreRelay&) = delete;

    /// A complete request from client `from`. Throws ProtocolError (close `from`) for what is
    /// not relayed or a client that queues more than it may.
    void handle(ConnId from, Request&& request, RelayEffects& fx);
    /// Forgets client `conn` (its wait, queued requests). Call when it closes.
    void disconnect(ConnId conn) noexcept;
    /// One of the relay's own connections (`id` has kLinkBit) is ready.
    void on_link_ready(std::uint64_t id, std::uint32_t events, RelayEffects& fx) noexcept;
    /// Connections to the head open now.
    std::size_t links_open() const noexcept;
    /// Clients in a shared WAIT now.
    std::size_t clients_waiting() const noexcept;

  private:
    struct Link;
    struct Client;
    struct WaitGroup;
    struct Expect;

    void dispatch(ConnId from, Client& client, Request&& request, RelayEffects& fx);
    void dispatch_next(ConnId from, RelayEffects& fx);
    void answered(ConnId client, RelayEffects& fx);
    void start_wait(ConnId from, Request&& request);
    void leave_wait(ConnId from, Client& client) noexcept;
    void send_add(Link& link, const std::string& key,
                  std::vector<std::pair<ConnId, std::int64_t>> adders);
    void send_get(Link& link, const std::string& key, std::vector<ConnId> getters);
    void on_reply(Link& link, Expect&& expect, std::string_view reply, RelayEffects& fx);
    /// A wait connection from the pool, or a new one (nullptr when none can be had).
    Link* take_wait_link();
    void release_wait_link(Link& link);
    Link& client_link(ConnId client);
    Link* connect_link(bool for_waits, std::string& error);
    void send(Link& link, const Request& request);
    void flush_soon();
    void flush_all(RelayEffects& fx);
    bool flush(Link& link, RelayEffects& fx);
    void read(Link& link, RelayEffects& fx);
    /// The front reply of `link` is over the relay's limit (`what`): drops its clients and
    /// skips it.
    void too_large(Link& link, const std::string& what, RelayEffects& fx);
    /// Closes `link` and every client with something pending on it.
    void fail(Link& link, const std::string& why, RelayEffects& fx) noexcept;
    void close_link(Link& link) noexcept;

    TcpStoreRelay options_;
    const TcpStoreLimits& limits_;
    EpollSet& set_;
    boost::asio::io_context& io_;
    spdlog::logger& log_;
    Apply apply_;
    std::vector<std::unique_ptr<Link>> links_;  ///< by index (the EpollSet id without kLinkBit)
    std::vector<std::size_t> pipes_;            ///< indices of the pipelined links
    std::vector<std::size_t> free_waits_;       ///< idle wait links
    std::unordered_map<ConnId, Client> clients_;
    std::unordered_map<std::string, std::unique_ptr<WaitGroup>> groups_;  ///< by their keys
    std::deque<std::string> groups_queued_;  ///< groups waiting for a wait link
    bool flush_posted_ = false;
    std::chrono::steady_clock::time_point retry_after_{};  ///< no reconnect before this
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ptrun::rdzv::detail
