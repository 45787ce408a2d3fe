#include "ptrun/launcher/multi_node.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ptrun/launcher/coordinator.hpp"
#include "ptrun/launcher/rdzv_keys.hpp"
#include "ptrun/launcher/rdzv_session.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace ptrun::launcher {
namespace {

/// getaddrinfo results, freed on scope exit.
struct Addresses {
    addrinfo* list = nullptr;
    Addresses(const std::string& host, std::uint16_t port, int socktype) {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = socktype;
        std::string service = std::to_string(port);
        if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &list) != 0) list = nullptr;
    }
    ~Addresses() {
        if (list) ::freeaddrinfo(list);
    }
    Addresses(const Addresses&) = delete;
    Addresses& operator=(const Addresses&) = delete;
};

std::string numeric_host(const sockaddr* addr, socklen_t len) {
    char text[NI_MAXHOST];
    if (::getnameinfo(addr, len, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) return {};
    return text;
}

/// A listening socket on every interface at `port` (IPv6 dual-stack when `v6`), or -1 with errno
/// EADDRINUSE when another process on this machine holds the port.
int listen_on(std::uint16_t port, bool v6) {
    int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage ss{};
    socklen_t len;
    if (v6) {
        int zero = 0;
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_any;
        a->sin6_port = htons(port);
        len = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_ANY);
        a->sin_port = htons(port);
        len = sizeof *a;
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 4096) != 0) {
        int saved = errno;
        ::close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

std::shared_ptr<spdlog::logger> quiet_store_logger(const std::shared_ptr<spdlog::logger>& logger) {
    auto l = logger->clone("store");
    l->set_level(spdlog::level::warn);
    return l;
}

}  // namespace

bool is_local_host(const std::string& host) {
    Addresses addrs(host, 0, SOCK_DGRAM);
    for (auto* a = addrs.list; a; a = a->ai_next) {
        int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        bool bound = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;
        ::close(fd);
        if (bound) return true;
    }
    return false;
}

std::string route_source_address(const std::string& host, std::uint16_t port) {
    Addresses addrs(host, port, SOCK_DGRAM);
    for (auto* a = addrs.list; a; a = a->ai_next) {
        int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        sockaddr_storage local{};
        socklen_t len = sizeof local;
        bool ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
        ::close(fd);
        if (ok) return numeric_host(reinterpret_cast<sockaddr*>(&local), len);
    }
    return {};
}

MultiNode::MultiNode() = default;
MultiNode::MultiNode(MultiNode&&) noexcept = default;
MultiNode::~MultiNode() {
    session.reset();      // its threads first: they talk to the store
    coordinator.reset();
    server.reset();
}

Membership MultiNode::membership() const {
    Membership m;
    m.session = session.get();
    m.coordinator = coordinator.get();
    m.self_id = self.id;
    return m;
}

MultiNode start_multi_node(const LaunchConfig& c, const std::string& random_id, std::shared_ptr<spdlog::logger> logger) {
    MultiNode mn;
    const HostPort& store = c.rendezvous_store;
    const bool v6 = store.host.find(':') != std::string::npos;
    const bool candidate = c.rdzv.is_host.value_or(is_local_host(store.host));
    if (candidate) {
        int fd = listen_on(store.port, v6);
        if (fd >= 0) {
            rdzv::TcpStoreServerOptions so;
            so.adopt_fd = fd;
            so.logger = quiet_store_logger(logger);
            mn.server = std::make_unique<rdzv::TcpStoreServer>(std::move(so));
            logger->info("hosting the rendezvous store on port {}", store.port);
        } else if (errno == EADDRINUSE && !c.rdzv.is_host) {
            logger->info("port {} is taken on this host (another agent hosts the store); joining it", store.port);
        } else {
            throw rdzv::StoreError("cannot host the rendezvous store on port " + std::to_string(store.port) + ": " +
                                   std::strerror(errno));
        }
    }

    mn.self.id = c.hostname + ":" + std::to_string(::getpid()) + ":" + random_id;
    mn.self.hostname = c.hostname;
    mn.self.addr = !c.local_addr.empty() ? c.local_addr : route_source_address(store.host, store.port);
    mn.self.nproc = c.nproc_per_node;
    mn.self.node_rank = c.node_rank_given ? c.node_rank : -1;
    mn.self.is_store_host = mn.server != nullptr;
    mn.self.max_restarts = c.max_restarts;

    const auto keys = rdzv_keys(c.run_id);
    if (mn.server) {
        CoordinatorOptions co;
        co.store = HostPort{v6 ? "::1" : "127.0.0.1", store.port};
        co.keys = keys;
        co.policy.min_nodes = c.nnodes.min;
        co.policy.max_nodes = c.nnodes.max;
        co.policy.max_restarts = c.max_restarts;
        co.policy.last_call = c.rdzv.last_call_timeout;
        co.policy.lost_after = c.rdzv.heartbeat * c.rdzv.keep_alive_max_attempt;
        co.policy.master_addr = store.host;
        co.policy.master_port = store.port;
        co.heartbeat = c.rdzv.heartbeat;
        auto* server = mn.server.get();
        co.clear_worker_keys = [server] { server->clear_except(kRdzvKeyRoot); };
        co.logger = logger;
        mn.coordinator = std::make_unique<Coordinator>(std::move(co));
    }
    RdzvSessionOptions so;
    so.store = store;
    so.keys = keys;
    so.self = mn.self;
    so.nnodes = c.nnodes;
    so.settings = c.rdzv;
    so.logger = logger;
    try {
        mn.session = std::make_unique<RdzvSession>(std::move(so));
    } catch (const rdzv::StoreError& e) {
        throw RendezvousError("cannot reach the rendezvous store at " + format_endpoint(store.host, store.port) +
                              " within join_timeout: " + e.what());
    }
    mn.workers_store = StoreEndpoint{store.host, store.port, true, {}};
    return mn;
}

}  // namespace ptrun::launcher
