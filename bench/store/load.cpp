// bench/store/load: one C++ load client for any TCPStore-wire server (ptrun-store, torch 1.13's
// own server, the epoll floor). It speaks the legacy (1.13) wire, which all three understand, from
// one epoll thread so that the client costs as little CPU as possible; --dialect modern speaks
// 2.2+'s (VALIDATE first on each connection, every code one higher), as torch 2.x's server needs.
//   load ops --port P --conns N [--seconds S] [--warmup S]
//       N connections, closed loop, one request in flight each; op mix in rotation
//       ADD, GET, CHECK, COMPARE_SET, WAIT (present key), every one a round trip.
//       Prints {"ops": n, "ops_per_s": x, "p50_us": x, "p99_us": x}.
//   load barrier --port P --clients C [--window W] [--tag T]
//       C clients connect (at most W connects in flight), each ADDs 1 to a counter; the one that
//       makes it C sets "done"; every client WAITs for "done". Prints {"connected_ms",
//       "barrier_ms"}.
// Raises RLIMIT_NOFILE to the hard limit. Exits 1 on a protocol or socket error.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
    std::string mode, host = "127.0.0.1", tag = "t";
    std::uint16_t port = 0;
    int conns = 1, clients = 1000, window = 512;
    double seconds = 1.0, warmup = 0.2;
    std::uint8_t code_offset = 0;  ///< modern dialect: every query code is one higher
    std::string hello;             ///< modern dialect: VALIDATE, sent first on every connection
};

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "load: %s%s%s\n", what.c_str(), errno ? ": " : "",
                 errno ? std::strerror(errno) : "");
    std::exit(1);
}

Args parse(int argc, char** argv) {
    if (argc < 2) die("usage: load ops|barrier --port P [...]");
    Args a;
    a.mode = argv[1];
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string f = argv[i], v = argv[i + 1];
        if (f == "--host")
            a.host = v;
        else if (f == "--port")
            a.port = static_cast<std::uint16_t>(std::stoul(v));
        else if (f == "--conns")
            a.conns = std::stoi(v);
        else if (f == "--clients")
            a.clients = std::stoi(v);
        else if (f == "--window")
            a.window = std::stoi(v);
        else if (f == "--seconds")
            a.seconds = std::stod(v);
        else if (f == "--warmup")
            a.warmup = std::stod(v);
        else if (f == "--tag")
            a.tag = v;
        else if (f == "--dialect") {
            if (v != "legacy" && v != "modern") die("--dialect: legacy or modern");
            a.code_offset = v == "modern" ? 1 : 0;
            a.hello = v == "modern" ? std::string("\x00\xce\xf7\x85\x3c", 5) : "";  // 0x3C85F7CE
        } else
            die("unknown flag " + f);
    }
    return a;
}

void raise_fd_limit() {
    rlimit l{};
    getrlimit(RLIMIT_NOFILE, &l);
    l.rlim_cur = l.rlim_max;
    setrlimit(RLIMIT_NOFILE, &l);
}

// Legacy (1.13) wire: u8 code, u64-length-prefixed strings, little-endian integers.
void put_u64(std::string& o, std::uint64_t v) { o.append(reinterpret_cast<const char*>(&v), 8); }
void put_str(std::string& o, const std::string& s) {
    put_u64(o, s.size());
    o += s;
}
std::string req(const Args& a, std::uint8_t code) {
    return std::string(1, static_cast<char>(code + a.code_offset));
}
std::string set_req(const Args& a, const std::string& k, const std::string& v) {
    auto r = req(a, 0);
    put_str(r, k);
    put_str(r, v);
    return r;
}
std::string add_req(const Args& a, const std::string& k, std::int64_t d) {
    auto r = req(a, 3);
    put_str(r, k);
    put_u64(r, static_cast<std::uint64_t>(d));
    return r;
}
std::string keys_req(const Args& a, std::uint8_t code, const std::string& k) {  // CHECK 4 / WAIT 5
    auto r = req(a, code);
    put_u64(r, 1);
    put_str(r, k);
    return r;
}

sockaddr_in address(const Args& a) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(a.port);
    if (inet_pton(AF_INET, a.host.c_str(), &sa.sin_addr) != 1) die("bad --host " + a.host);
    return sa;
}

int open_socket() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

void send_all(int fd, const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) continue;  // requests are tiny; the buffer drains at once
        if (n <= 0) die("send");
        off += static_cast<std::size_t>(n);
    }
}

struct Conn {
    int fd = -1;
    std::vector<std::string> requests;    ///< the op mix, in rotation
    std::vector<std::size_t> reply_size;  ///< expected reply bytes per op
    std::size_t next = 0, got = 0;
    Clock::time_point sent;
    int stage = 0;  ///< barrier: 0 connecting, 1 awaiting ADD reply, 2 awaiting STOP, 3 done
};

void epoll_add(int ep, int fd, std::uint32_t events, std::uint64_t id) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
}

int run_ops(const Args& a) {
    const auto sa = address(a);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    std::vector<Conn> conns(static_cast<std::size_t>(a.conns));
    const std::string value(16, 'v');
    for (std::size_t i = 0; i < conns.size(); ++i) {
        auto& c = conns[i];
        c.fd =
            socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // blocking connect, then non-blocking
        if (c.fd < 0 || connect(c.fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0)
            die("connect");
        int one = 1;
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        const std::string key = "/bench/" + a.tag + "/" + std::to_string(i);
        auto cas = req(a, 1);
        put_str(cas, key);
        put_str(cas, value);
        put_str(cas, value);
        auto get = req(a, 2);
        put_str(get, key);
        c.requests = {add_req(a, key + "/n", 1), get, keys_req(a, 4, key), cas,
                      keys_req(a, 5, key)};
        c.reply_size = {8, 8 + value.size(), 1, 8 + value.size(), 1};
        send_all(c.fd, a.hello + set_req(a, key, value));  // no reply; the server applies it first
        fcntl(c.fd, F_SETFL, O_NONBLOCK);
        epoll_add(ep, c.fd, EPOLLIN, i);
    }
    std::vector<std::uint32_t> latencies_ns;
    latencies_ns.reserve(4'000'000);
    const auto start = Clock::now();
    const auto measure_from = start + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(a.warmup));
    const auto end = measure_from + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(a.seconds));
    for (auto& c : conns) {
        c.sent = Clock::now();
        send_all(c.fd, c.requests[0]);
    }
    std::size_t in_flight = conns.size(), completed = 0;
    std::vector<epoll_event> events(1024);
    char buf[4096];
    while (in_flight > 0) {
        const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10'000);
        if (n <= 0) die("no reply within 10 s");
        const auto now = Clock::now();
        for (int e = 0; e < n; ++e) {
            auto& c = conns[events[static_cast<std::size_t>(e)].data.u64];
            const ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
            if (r <= 0) die("server closed a connection");
            c.got += static_cast<std::size_t>(r);
            const std::size_t want = c.reply_size[c.next % c.reply_size.size()];
            if (c.got < want) continue;
            if (c.got > want) die("more reply bytes than expected");
            c.got = 0;
            ++completed;
            if (now >= measure_from && now < end) {
                latencies_ns.push_back(static_cast<std::uint32_t>(
                    std::min<std::int64_t>(UINT32_MAX, (now - c.sent).count())));
            }
            if (now >= end) {
                --in_flight;
                continue;
            }
            ++c.next;
            c.sent = now;
            send_all(c.fd, c.requests[c.next % c.requests.size()]);
        }
    }
    for (auto& c : conns) close(c.fd);
    close(ep);
    std::sort(latencies_ns.begin(), latencies_ns.end());
    auto pct = [&](double p) {
        if (latencies_ns.empty()) return 0.0;
        return latencies_ns[static_cast<std::size_t>(
                   p * static_cast<double>(latencies_ns.size() - 1))] /
               1e3;
    };
    std::printf(
        "{\"conns\": %d, \"ops\": %zu, \"all_ops\": %zu, \"ops_per_s\": %.0f, "
        "\"p50_us\": %.1f, \"p99_us\": %.1f}\n",
        a.conns, latencies_ns.size(), completed,
        static_cast<double>(latencies_ns.size()) / a.seconds, pct(0.50), pct(0.99));
    return 0;
}

int run_barrier(const Args& a) {
    const auto sa = address(a);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    const std::size_t total = static_cast<std::size_t>(a.clients);
    std::vector<Conn> conns(total);
    const std::string counter = "/barrier/" + a.tag, done = "/done/" + a.tag;
    const auto start = Clock::now();
    Clock::time_point all_connected{}, all_done{};
    std::size_t started = 0, connecting = 0, connected = 0, finished = 0;
    auto start_more = [&] {
        while (started < total && connecting < static_cast<std::size_t>(a.window)) {
            auto& c = conns[started];
            c.fd = open_socket();
            const int rc = connect(c.fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
            if (rc != 0 && errno != EINPROGRESS) die("connect");
            epoll_add(ep, c.fd, EPOLLOUT | EPOLLIN, started);
            ++started;
            ++connecting;
        }
    };
    start_more();
    std::vector<epoll_event> events(4096);
    char buf[64];
    while (finished < total) {
        const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 30'000);
        if (n <= 0) die("barrier stalled for 30 s (" + std::to_string(finished) + " done)");
        for (int e = 0; e < n; ++e) {
            const auto& ev = events[static_cast<std::size_t>(e)];
            auto& c = conns[ev.data.u64];
            if (c.stage == 0) {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err != 0) {
                    errno = err;
                    die("connect");
                }
                epoll_event mod{};
                mod.events = EPOLLIN;
                mod.data.u64 = ev.data.u64;
                epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &mod);
                --connecting;
                if (++connected == total) all_connected = Clock::now();
                c.stage = 1;
                send_all(c.fd, a.hello + add_req(a, counter, 1));
                start_more();
                continue;
            }
            const ssize_t r = ::recv(c.fd, buf + c.got, (c.stage == 1 ? 8 : 1) - c.got, 0);
            if (r < 0 && errno == EAGAIN) continue;
            if (r <= 0) die("server closed a connection");
            c.got += static_cast<std::size_t>(r);
            if (c.stage == 1 && c.got == 8) {
                std::int64_t count = 0;
                std::memcpy(&count, buf, 8);
                c.got = 0;
                c.stage = 2;
                send_all(c.fd, (count == a.clients ? set_req(a, done, "1") : std::string()) +
                                   keys_req(a, 5, done));
            } else if (c.stage == 2 && c.got == 1) {
                if (buf[0] != 0) die("WAIT reply is not STOP_WAITING");
                c.stage = 3;
                if (++finished == total) all_done = Clock::now();
            }
        }
    }
    for (auto& c : conns) close(c.fd);
    close(ep);
    auto ms = [&](Clock::time_point t) {
        return std::chrono::duration<double, std::milli>(t - start).count();
    };
    std::printf("{\"clients\": %d, \"connected_ms\": %.1f, \"barrier_ms\": %.1f}\n", a.clients,
                ms(all_connected), ms(all_done));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const Args a = parse(argc, argv);
    raise_fd_limit();
    if (a.mode == "ops") return run_ops(a);
    if (a.mode == "barrier") return run_barrier(a);
    die("mode must be ops or barrier");
}
