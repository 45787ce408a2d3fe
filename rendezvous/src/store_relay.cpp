#include "store_relay.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "ptrun/rendezvous/errors.hpp"
#include "reply_parser.hpp"
#include "socket_io.hpp"

namespace ptrun::rdzv::detail {
namespace {
constexpr std::size_t kMaxQueuedPerClient = 256;  ///< requests a client may send ahead
constexpr std::size_t kReadBytes = 64 * 1024;
constexpr auto kStopWaiting = static_cast<std::uint8_t>(WaitResponse::StopWaiting);
constexpr auto kWaitCanceled = static_cast<std::uint8_t>(WaitResponse::WaitCanceled);

/// The clients held behind the ADD or GET of `key` that just returned (none: empty); the key is
/// then no longer in flight on that link.
template <typename Held>
typename Held::mapped_type take_held(Held& held, const std::string& key) {
    typename Held::mapped_type next;
    if (auto it = held.find(key); it != held.end()) {
        next = std::move(it->second);
        held.erase(it);
    }
    return next;
}

/// One string naming a set of keys (lengths first: no two sets collide).
std::string group_name(const std::vector<std::string>& keys) {
    std::string name;
    for (const auto& key : keys) {
        put_u64(name, key.size());
        name += key;
    }
    return name;
}
}  // namespace

/// What a link's next reply answers.
struct StoreRelay::Expect {
    enum class Kind { Single, Adds, Gets, Group, Barrier };
    Kind kind = Kind::Single;
    Op op = Op::Ping;
    std::size_t keys = 0;  ///< MULTI_GET's count
    ConnId client = 0;     ///< Single, Barrier
    std::string key;       ///< Adds, Gets: the key; Group: the group's name
    std::vector<std::pair<ConnId, std::int64_t>> adders;
    std::vector<ConnId> getters;
};

struct StoreRelay::Link {
    std::size_t index = 0;
    bool for_waits = false;
    sys::Fd fd;
    std::string out;  ///< encoded requests not yet written
    std::string in;   ///< reply bytes not yet framed
    std::deque<Expect> expects;
    bool watching_output = false;
    bool dirty = false;                    ///< `out` has bytes a flush has not tried yet
    std::optional<ReplySkipper> skipping;  ///< the rest of a reply too large to hold
    /// ADDs and GETs of one key in flight on this link, and the clients held behind them.
    std::unordered_map<std::string, std::vector<std::pair<ConnId, std::int64_t>>> adds_held;
    std::unordered_map<std::string, std::vector<ConnId>> gets_held;
};

struct StoreRelay::Client {
    std::deque<Request> queued;
    bool busy = false;        ///< a request forwarded and not yet answered
    std::string group;        ///< the wait group it is in (empty: none)
    Link* barrier = nullptr;  ///< the wait link of its BARRIER
};

struct StoreRelay::WaitGroup {
    Request wait;  ///< the WAIT that is (or will be) sent
    std::vector<ConnId> members;
    Link* link = nullptr;  ///< null while queued for a link
};

StoreRelay::StoreRelay(const TcpStoreRelay& options, const TcpStoreLimits& limits, EpollSet& set,
                       boost::asio::io_context& io, spdlog::logger& log, Apply apply)
    : options_(options), limits_(limits), set_(set), io_(io), log_(log), apply_(std::move(apply)) {
    const int n = std::max(1, options_.links);
    for (int i = 0; i < n; ++i) {
        std::string error;
        Link* link = connect_link(false, error);
        if (!link) {
            throw StoreError("store relay: cannot connect to the store at " + options_.host + ":" +
                             std::to_string(options_.port) + ": " + error);
        }
        pipes_.push_back(link->index);
    }
    log_.info("store relay: {} connections to the store at {}:{}", n, options_.host, options_.port);
}

StoreRelay::~StoreRelay() {
    *alive_ = false;
    for (auto& link : links_) {
        if (link) close_link(*link);
    }
}

std::size_t StoreRelay::links_open() const noexcept {
    std::size_t n = 0;
    for (const auto& link : links_) n += link && link->fd ? 1u : 0u;
    return n;
}

std::size_t StoreRelay::clients_waiting() const noexcept {
    std::size_t n = 0;
    for (const auto& [name, group] : groups_) n += group->members.size();
    return n;
}

StoreRelay::Link* StoreRelay::connect_link(bool for_waits, std::string& error) {
    Fd fd;
    try {
        fd = connect_tcp(options_.host, options_.port,
                         Clock::now() + std::chrono::seconds(options_.connect_timeout));
    } catch (const std::exception& e) {
        error = e.what();
        return nullptr;
    }
    std::size_t index = links_.size();
    for (std::size_t i = 0; i < links_.size(); ++i) {
        if (links_[i]->for_waits && !links_[i]->fd) {  // a closed wait link's slot
            index = i;
            break;
        }
    }
    auto link = std::make_unique<Link>();
    link->index = index;
    link->for_waits = for_waits;
    link->fd = std::move(fd);
    set_.add(link->fd.get(), kLinkBit | index);
    Link* raw = link.get();
    if (index == links_.size()) {
        links_.push_back(std::move(link));
    } else {
        links_[index] = std::move(link);
    }
    Request validate;
    validate.op = Op::Validate;
    validate.word = kValidationMagic;
    send(*raw, validate);
    return raw;
}

StoreRelay::Link& StoreRelay::client_link(ConnId client) {
    const std::size_t index = pipes_[client % pipes_.size()];
    Link* link = links_[index].get();
    if (link && link->fd) return *link;
    // It failed earlier: a new one in its place, tried at most once a second (a store that is
    // gone does not hold every request up for a connect timeout).
    std::string error = "the last attempt failed under a second ago";
    Link* fresh = nullptr;
    if (Clock::now() >= retry_after_) {
        fresh = connect_link(false, error);
        if (!fresh) retry_after_ = Clock::now() + std::chrono::seconds(1);
    }
    if (!fresh) {
        throw ProtocolError("the store relay cannot reach the store at " + options_.host + ":" +
                            std::to_string(options_.port) + ": " + error);
    }
    pipes_[client % pipes_.size()] = fresh->index;
    return *fresh;
}

void StoreRelay::send(Link& link, const Request& request) {
    link.out += encode_request(Dialect::Modern, request);
    if (!link.dirty) {
        link.dirty = true;
        flush_soon();
    }
}

void StoreRelay::flush_soon() {
    if (flush_posted_) return;
    flush_posted_ = true;
    // After the current wakeup: every request it read leaves in one send per link.
    boost::asio::post(io_, [this, alive = alive_] {
        if (!*alive) return;
        flush_posted_ = false;
        RelayEffects fx;
        flush_all(fx);
        apply_(fx);
    });
}

void StoreRelay::flush_all(RelayEffects& fx) {
    for (auto& link : links_) {
        if (link && link->dirty) {
            link->dirty = false;
            flush(*link, fx);
        }
    }
}

bool StoreRelay::flush(Link& link, RelayEffects& fx) {
    while (!link.out.empty()) {
        const ssize_t n =
            ::send(link.fd.get(), link.out.data(), link.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            link.out.erase(0, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        fail(link, std::string("cannot write to the store: ") + std::strerror(errno), fx);
        return false;
    }
    const bool want = !link.out.empty();
    if (want != link.watching_output) {
        link.watching_output = want;
        set_.watch_output(link.fd.get(), kLinkBit | link.index, want);
    }
    return true;
}

void StoreRelay::handle(ConnId from, Request&& request, RelayEffects& fx) {
    Client& client = clients_[from];
    if (!client.group.empty() || client.barrier) {
        // Anything after a WAIT gives it up (spec §2.4.7); CANCEL_WAIT is answered here.
        leave_wait(from, client);
        client.busy = false;
        if (request.op == Op::CancelWait) {
            fx.out.push_back(reply_u8(from, kWaitCanceled));
            return;
        }
    }
    if (client.busy || !client.queued.empty()) {
        if (client.queued.size() >= kMaxQueuedPerClient) {
            throw ProtocolError("more than " + std::to_string(kMaxQueuedPerClient) +
                                " requests sent ahead of their replies through the store relay");
        }
        client.queued.push_back(std::move(request));
        return;
    }
    dispatch(from, client, std::move(request), fx);
}

void StoreRelay::dispatch(ConnId from, Client& client, Request&& request, RelayEffects& fx) {
    switch (request.op) {
        case Op::Ping: {
            Outgoing o(from, {});
            put_u32(o.bytes, request.word);
            fx.out.push_back(std::move(o));
            return;
        }
        case Op::CancelWait:  // nothing is waiting (a wait already answered)
            fx.out.push_back(reply_u8(from, kWaitCanceled));
            return;
        case Op::WatchKey:
            throw ProtocolError(
                "WATCH_KEY (a 1.13 callback connection) is not relayed: connect to the store "
                "itself for it");
        case Op::Wait:
            if (request.keys.empty()) {
                fx.out.push_back(reply_u8(from, kStopWaiting));
                return;
            }
            client.busy = true;
            start_wait(from, std::move(request));
            return;
        case Op::Barrier: {
            Link* link = take_wait_link();
            if (!link) throw ProtocolError("no connection to the store for a BARRIER");
            client.busy = true;
            client.barrier = link;
            Expect e;
            e.kind = Expect::Kind::Barrier;
            e.op = Op::Barrier;
            e.client = from;
            link->expects.push_back(std::move(e));
            send(*link, request);
            return;
        }
        default:
            break;
    }
    Link& link = client_link(from);
    if (link.out.size() > limits_.max_queued_bytes_per_connection) {
        throw ProtocolError(
            "the store does not take requests as fast as this client sends them "
            "through the store relay (max_queued_bytes_per_connection)");
    }
    if (!has_reply(request.op)) {  // its next request follows it on the same link
        send(link, request);
        return;
    }
    client.busy = true;
    if (request.op == Op::Add) {
        auto held = link.adds_held.find(request.keys[0]);
        if (held != link.adds_held.end()) {
            held->second.emplace_back(from, request.number);
            return;
        }
        send_add(link, request.keys[0], {{from, request.number}});
        return;
    }
    if (request.op == Op::Get) {
        auto held = link.gets_held.find(request.keys[0]);
        if (held != link.gets_held.end()) {
            held->second.push_back(from);
            return;
        }
        send_get(link, request.keys[0], {from});
        return;
    }
    Expect e;
    e.op = request.op;
    e.keys = request.keys.size();
    e.client = from;
    link.expects.push_back(std::move(e));
    send(link, request);
}

void StoreRelay::send_add(Link& link, const std::string& key,
                          std::vector<std::pair<ConnId, std::int64_t>> adders) {
    std::int64_t sum = 0;
    for (const auto& adder : adders) {
        if (__builtin_add_overflow(sum, adder.second, &sum)) {
            // One ADD each: the store says which overflows.
            for (auto& one : adders) send_add(link, key, {one});
            return;
        }
    }
    Request add;
    add.op = Op::Add;
    add.keys = {key};
    add.number = sum;
    Expect e;
    e.kind = Expect::Kind::Adds;
    e.op = Op::Add;
    e.key = key;
    e.adders = std::move(adders);
    link.expects.push_back(std::move(e));
    link.adds_held.try_emplace(key);  // later ADDs of `key` wait behind this one
    send(link, add);
}

void StoreRelay::send_get(Link& link, const std::string& key, std::vector<ConnId> getters) {
    Request get;
    get.op = Op::Get;
    get.keys = {key};
    Expect e;
    e.kind = Expect::Kind::Gets;
    e.op = Op::Get;
    e.key = key;
    e.getters = std::move(getters);
    link.expects.push_back(std::move(e));
    link.gets_held.try_emplace(key);
    send(link, get);
}

void StoreRelay::start_wait(ConnId from, Request&& request) {
    std::string name = group_name(request.keys);
    clients_[from].group = name;
    auto [it, fresh] = groups_.try_emplace(name);
    if (!fresh) {
        it->second->members.push_back(from);
        return;
    }
    it->second = std::make_unique<WaitGroup>();
    WaitGroup& group = *it->second;
    group.members.push_back(from);
    group.wait = std::move(request);
    Link* link = take_wait_link();
    if (!link) {
        groups_queued_.push_back(name);
        return;
    }
    group.link = link;
    Expect e;
    e.kind = Expect::Kind::Group;
    e.op = Op::Wait;
    e.key = name;
    link->expects.push_back(std::move(e));
    send(*link, group.wait);
}

StoreRelay::Link* StoreRelay::take_wait_link() {
    while (!free_waits_.empty()) {
        const std::size_t index = free_waits_.back();
        free_waits_.pop_back();
        Link* link = links_[index].get();
        if (link && link->fd) return link;
    }
    std::size_t open = 0;
    for (const auto& link : links_) open += link && link->for_waits && link->fd ? 1u : 0u;
    if (open >= static_cast<std::size_t>(std::max(1, options_.max_wait_links))) return nullptr;
    std::string error;
    Link* link = connect_link(true, error);
    if (!link) log_.warn("store relay: cannot open a connection for waits: {}", error);
    return link;
}

void StoreRelay::release_wait_link(Link& link) {
    // A queued group takes it at once; else it waits in the pool.
    while (!groups_queued_.empty()) {
        const std::string name = std::move(groups_queued_.front());
        groups_queued_.pop_front();
        auto it = groups_.find(name);
        if (it == groups_.end() || it->second->link) continue;
        it->second->link = &link;
        Expect e;
        e.kind = Expect::Kind::Group;
        e.op = Op::Wait;
        e.key = name;
        link.expects.push_back(std::move(e));
        send(link, it->second->wait);
        return;
    }
    free_waits_.push_back(link.index);
}

void StoreRelay::leave_wait(ConnId from, Client& client) noexcept {
    if (client.barrier) {  // its BARRIER cannot be taken back: the connection goes
        close_link(*client.barrier);
        client.barrier = nullptr;
    }
    if (client.group.empty()) return;
    auto it = groups_.find(client.group);
    client.group.clear();
    if (it == groups_.end()) return;
    auto& members = it->second->members;
    std::erase(members, from);
    if (!members.empty()) return;
    // Nobody waits any more: the store forgets the WAIT when its connection closes.
    if (it->second->link) close_link(*it->second->link);
    groups_.erase(it);
}

void StoreRelay::disconnect(ConnId conn) noexcept {
    auto it = clients_.find(conn);
    if (it == clients_.end()) return;
    leave_wait(conn, it->second);
    clients_.erase(it);
}

void StoreRelay::answered(ConnId client, RelayEffects& fx) {
    auto it = clients_.find(client);
    if (it == clients_.end()) return;
    it->second.busy = false;
    dispatch_next(client, fx);
}

void StoreRelay::dispatch_next(ConnId from, RelayEffects& fx) {
    auto it = clients_.find(from);
    while (it != clients_.end() && !it->second.busy && !it->second.queued.empty()) {
        Request next = std::move(it->second.queued.front());
        it->second.queued.pop_front();
        try {
            dispatch(from, it->second, std::move(next), fx);
        } catch (const std::exception& e) {
            fx.drops.emplace_back(from, e.what());
            return;
        }
    }
}

void StoreRelay::on_link_ready(std::uint64_t id, std::uint32_t events, RelayEffects& fx) noexcept {
    const std::size_t index = id & ~kLinkBit;
    if (index >= links_.size() || !links_[index] || !links_[index]->fd) return;
    Link& link = *links_[index];
    try {
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read(link, fx);
        if ((events & EPOLLOUT) && link.fd) flush(link, fx);
    } catch (const std::exception& e) {
        fail(link, e.what(), fx);
    }
}

void StoreRelay::read(Link& link, RelayEffects& fx) {
    char buffer[kReadBytes];
    const ssize_t n = ::recv(link.fd.get(), buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) {
        fail(link, "the store closed the connection", fx);
        return;
    }
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        fail(link, std::string("cannot read from the store: ") + std::strerror(errno), fx);
        return;
    }
    link.in.append(buffer, static_cast<std::size_t>(n));
    std::size_t at = 0;
    for (;;) {
        const std::string_view rest = std::string_view(link.in).substr(at);
        if (link.skipping) {
            at += link.skipping->consume(rest);
            if (!link.skipping->done()) break;
            link.skipping.reset();
            continue;
        }
        if (link.expects.empty()) {
            if (!rest.empty()) {
                fail(link, "the store sent bytes nothing asked for", fx);
                return;
            }
            break;
        }
        const Expect& next = link.expects.front();
        std::optional<std::size_t> size;
        try {
            size = reply_size(rest, next.op, next.keys, limits_.max_request_bytes);
        } catch (const ProtocolError& e) {
            too_large(link, e.what(), fx);
            continue;
        }
        if (!size) break;
        Expect expect = std::move(link.expects.front());
        link.expects.pop_front();
        on_reply(link, std::move(expect), rest.substr(0, *size), fx);
        at += *size;
        if (!link.fd) return;
    }
    link.in.erase(0, at);
}

void StoreRelay::too_large(Link& link, const std::string& what, RelayEffects& fx) {
    // Its clients go; the reply's bytes are skipped as they come, the link serves on.
    Expect expect = std::move(link.expects.front());
    link.expects.pop_front();
    const std::string reason = "its reply through the store relay would be " + what +
                               " (the relay holds one reply whole: max_request_bytes)";
    if (expect.client) fx.drops.emplace_back(expect.client, reason);
    for (ConnId getter : expect.getters) fx.drops.emplace_back(getter, reason);
    if (expect.kind == Expect::Kind::Gets) {  // those held behind it would get the same
        auto held = link.gets_held.find(expect.key);
        if (held != link.gets_held.end()) {
            for (ConnId getter : held->second) fx.drops.emplace_back(getter, reason);
            link.gets_held.erase(held);
        }
    }
    link.skipping.emplace(expect.op, expect.keys);
}

void StoreRelay::on_reply(Link& link, Expect&& expect, std::string_view reply, RelayEffects& fx) {
    switch (expect.kind) {
        case Expect::Kind::Single:
            fx.out.emplace_back(expect.client, std::string(reply));
            answered(expect.client, fx);
            return;
        case Expect::Kind::Adds: {
            const std::int64_t total = load_raw<std::int64_t>(reply.data());
            std::int64_t sum = 0;
            for (const auto& adder : expect.adders) sum += adder.second;
            std::int64_t before = total - sum;  // each client's ADD as if applied in turn
            for (const auto& [client, delta] : expect.adders) {
                before += delta;
                fx.out.push_back(reply_i64(client, before));
                answered(client, fx);
            }
            if (auto next = take_held(link.adds_held, expect.key); !next.empty()) {
                send_add(link, expect.key, std::move(next));
            }
            return;
        }
        case Expect::Kind::Gets: {
            // One copy of a large value, whatever the number of clients that read it.
            BlobPtr shared;
            if (expect.getters.size() > 1 && reply.size() >= ReplyBuilder::kShareFromBytes) {
                shared = std::make_shared<Blob>(Blob{std::string(reply), 0});
            }
            for (ConnId client : expect.getters) {
                if (shared) {
                    Outgoing o(client, {});
                    o.shared.push_back(SharedPart{shared, {}});
                    fx.out.push_back(std::move(o));
                } else {
                    fx.out.emplace_back(client, std::string(reply));
                }
                answered(client, fx);
            }
            if (auto next = take_held(link.gets_held, expect.key); !next.empty()) {
                send_get(link, expect.key, std::move(next));
            }
            return;
        }
        case Expect::Kind::Group: {
            auto it = groups_.find(expect.key);
            if (it != groups_.end() && it->second->link == &link) {  // else: all left
                auto group = std::move(it->second);
                groups_.erase(it);
                for (ConnId client : group->members) {
                    auto c = clients_.find(client);
                    if (c != clients_.end()) c->second.group.clear();
                    fx.out.push_back(reply_u8(client, static_cast<std::uint8_t>(reply[0])));
                    answered(client, fx);
                }
            }
            if (link.fd) release_wait_link(link);
            return;
        }
        case Expect::Kind::Barrier: {
            auto c = clients_.find(expect.client);
            if (c != clients_.end()) c->second.barrier = nullptr;
            fx.out.push_back(reply_u8(expect.client, static_cast<std::uint8_t>(reply[0])));
            answered(expect.client, fx);
            if (link.fd) release_wait_link(link);
            return;
        }
    }
}

void StoreRelay::fail(Link& link, const std::string& why, RelayEffects& fx) noexcept {
    try {
        log_.warn("store relay: connection to the store at {}:{}: {}", options_.host, options_.port,
                  why);
        const std::string reason = "the store relay lost its connection to the store at " +
                                   options_.host + ":" + std::to_string(options_.port) + " (" +
                                   why + ")";
        for (const auto& e : link.expects) {
            if (e.client) fx.drops.emplace_back(e.client, reason);
            for (const auto& adder : e.adders) fx.drops.emplace_back(adder.first, reason);
            for (ConnId getter : e.getters) fx.drops.emplace_back(getter, reason);
            if (e.kind == Expect::Kind::Group) {
                auto it = groups_.find(e.key);
                if (it != groups_.end()) {
                    for (ConnId member : it->second->members) fx.drops.emplace_back(member, reason);
                    for (ConnId member : it->second->members) clients_[member].group.clear();
                    groups_.erase(it);
                }
            }
        }
        for (const auto& [key, held] : link.adds_held) {
            for (const auto& adder : held) fx.drops.emplace_back(adder.first, reason);
        }
        for (const auto& [key, held] : link.gets_held) {
            for (ConnId getter : held) fx.drops.emplace_back(getter, reason);
        }
        if (!link.for_waits) {  // their writes without a reply may be lost with it: all go
            for (const auto& entry : clients_) {
                if (pipes_[entry.first % pipes_.size()] == link.index) {
                    fx.drops.emplace_back(entry.first, reason);
                }
            }
        }
    } catch (...) {  // no memory for the messages: the clients stay until they time out
    }
    close_link(link);
}

void StoreRelay::close_link(Link& link) noexcept {
    if (!link.fd) return;
    for (auto& [client, state] : clients_) {
        if (state.barrier == &link) state.barrier = nullptr;
    }
    link.fd.reset();  // closing it takes it out of the epoll set; a pipe is remade when used
    link.expects.clear();
    link.adds_held.clear();
    link.gets_held.clear();
    link.out.clear();
    link.in.clear();
    std::erase(free_waits_, link.index);
}

}  // namespace ptrun::rdzv::detail
