/// libFuzzer target for the server's connection layer: one real TcpStoreServer on loopback (small
/// limits, so that budgets, queue limits and refusals are reached quickly) driven by a script of
/// client actions on up to 4 sockets at once: connects, raw or well-formed requests written in
/// pieces, half-closes, resets, clients that never read. After every input all of its sockets
/// are reset, and the server must still answer a PING on a fresh connection within 5 s and keep
/// its buffers within max_buffered_bytes; anything else aborts (a finding), as do ASan/UBSan
/// reports from the server thread.
///
/// Loopback only: every socket connects to 127.0.0.1 (from a rotating 127.0.0.x source address,
/// so that client-side TIME_WAIT entries do not exhaust the ephemeral ports).

#include <arpa/inet.h>
#include <fcntl.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "protocol.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

using namespace ptrun::rdzv;
using namespace ptrun::rdzv::detail;

namespace {

constexpr int kSlots = 4;
constexpr int kMaxActions = 64;

TcpStoreLimits fuzz_limits() {
    TcpStoreLimits l;
    l.max_key_bytes = 64;
    l.max_value_bytes = 4096;
    l.max_keys_per_request = 16;
    l.max_request_bytes = 16 * 1024;
    l.max_queued_bytes_per_connection = 32 * 1024;
    l.max_connections = 4096;
    l.max_buffered_bytes = 128 * 1024;
    l.max_stored_bytes = 64 * 1024;
    return l;
}

TcpStoreServer& server() {
    static TcpStoreServer instance([] {
        TcpStoreServerOptions o;
        o.host = "127.0.0.1";
        o.limits = fuzz_limits();
        o.keepalive = std::chrono::seconds(0);
        return o;
    }());
    return instance;
}

[[noreturn]] void finding(const char* what) {
    std::fprintf(stderr, "server_fuzz: %s\n", what);
    std::abort();
}

using Clock = std::chrono::steady_clock;

/// Waits until `fd` has `events` or `deadline` passes; false on the deadline. A signal is not
/// an answer: libFuzzer's -timeout alarm (SIGALRM, every timeout/2+1 s) interrupts poll and
/// connect in this thread, and must not be taken for a silent server.
bool wait_for(int fd, short events, Clock::time_point deadline) {
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return false;
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(left.count()));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
}

/// A non-blocking client socket connected to the server within 5 s, or -1.
int connect_client() {
    static unsigned source = 0;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = htonl(0x7F000001u + (source++ % 200));  // 127.0.0.1 .. 127.0.0.200
    ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(server().port());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
        int error = errno;
        if (error == EINPROGRESS) {
            socklen_t length = sizeof error;
            error = ETIMEDOUT;
            if (wait_for(fd, POLLOUT, Clock::now() + std::chrono::seconds(5))) {
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
            }
        }
        if (error != 0) {
            ::close(fd);
            return -1;
        }
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

void reset(int& fd) {
    if (fd < 0) return;
    const linger hard{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    ::close(fd);
    fd = -1;
}

/// Writes what the socket takes now (a partial write is part of the game).
void send_some(int fd, const std::string& bytes) {
    if (fd >= 0 && !bytes.empty()) ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

void drain(int fd) {
    char sink[16384];
    while (fd >= 0 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
}

/// A well-formed request of a fuzzer-chosen op, keys and values (keys from a small alphabet so
/// that requests meet each other's keys).
std::string well_formed(FuzzedDataProvider& in, Dialect dialect) {
    constexpr std::array<Op, 18> kOps = {
        Op::Set,        Op::CompareSet, Op::Get,       Op::Add,      Op::Check,    Op::Wait,
        Op::NumKeys,    Op::WatchKey,   Op::DeleteKey, Op::Append,   Op::MultiGet, Op::MultiSet,
        Op::CancelWait, Op::Ping,       Op::QueuePush, Op::QueuePop, Op::ListKeys, Op::Barrier,
    };
    Request r;
    r.op = kOps[in.ConsumeIntegralInRange<std::size_t>(0, kOps.size() - 1)];
    const auto key = [&] {
        return std::string(1, static_cast<char>('a' + in.ConsumeIntegralInRange(0, 3)));
    };
    const auto value = [&] {
        const auto n = in.ConsumeIntegralInRange<std::size_t>(0, 5000);  // sometimes over the limit
        return std::string(n, static_cast<char>(in.ConsumeIntegral<char>()));
    };
    switch (r.op) {
        case Op::Check:
        case Op::Wait:
        case Op::MultiGet:
            for (int i = in.ConsumeIntegralInRange(0, 20); i > 0; --i) r.keys.push_back(key());
            break;
        case Op::MultiSet:
            for (int i = in.ConsumeIntegralInRange(0, 4); i > 0; --i) {
                r.keys.push_back(key());
                r.values.push_back(value());
            }
            break;
        case Op::CompareSet:
            r.keys.push_back(key());
            r.values = {value(), value()};
            break;
        case Op::Set:
        case Op::Append:
        case Op::QueuePush:
            r.keys.push_back(key());
            r.values.push_back(value());
            break;
        case Op::Add:
        case Op::Barrier:
            r.keys.push_back(key());
            r.number = in.ConsumeIntegralInRange<std::int64_t>(-2, 3);
            break;
        case Op::Ping:
            r.word = in.ConsumeIntegral<std::uint32_t>();
            break;
        case Op::NumKeys:
        case Op::CancelWait:
        case Op::ListKeys:
            break;
        default:
            r.keys.push_back(key());
            break;
    }
    try {
        return encode_request(dialect, r);
    } catch (const StoreError&) {  // an op the dialect lacks
        return {};
    }
}

/// The server answers a PING on a fresh connection within 5 s.
void check_alive() {
    int fd = -1;
    for (int attempt = 0; attempt < 3 && fd < 0; ++attempt) fd = connect_client();
    if (fd < 0) finding("cannot connect to the server");
    const std::string ping = std::string("\x00\xCE\xF7\x85\x3C\x0D", 6) + "PONG";
    send_some(fd, ping);
    std::string got;
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (got.size() < 4) {
        if (!wait_for(fd, POLLIN, deadline)) {
            finding("the server did not answer a PING within 5 s");
        }
        char buf[4];
        const ssize_t n = ::recv(fd, buf, 4 - got.size(), 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) finding("the server closed a well-behaved connection");
        got.append(buf, static_cast<std::size_t>(n));
    }
    if (got != "PONG") finding("wrong PING answer");
    reset(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    std::array<int, kSlots> fds;
    std::array<Dialect, kSlots> dialects{};
    fds.fill(-1);
    for (int step = 0; step < kMaxActions && in.remaining_bytes() > 0; ++step) {
        const int slot = in.ConsumeIntegralInRange(0, kSlots - 1);
        int& fd = fds[static_cast<std::size_t>(slot)];
        Dialect& dialect = dialects[static_cast<std::size_t>(slot)];
        switch (in.ConsumeIntegralInRange(0, 8)) {
            case 0:  // connect, as a modern (VALIDATE first) or legacy client
                reset(fd);
                fd = connect_client();
                dialect = in.ConsumeBool() ? Dialect::Modern : Dialect::Legacy;
                if (dialect == Dialect::Modern) {
                    send_some(fd, std::string("\x00\xCE\xF7\x85\x3C", 5));
                }
                break;
            case 1:
                send_some(fd, in.ConsumeRandomLengthString(2048));
                break;
            case 2: {  // a well-formed request, possibly cut into two writes
                const std::string r = well_formed(in, dialect);
                const auto cut = in.ConsumeIntegralInRange<std::size_t>(0, r.size());
                send_some(fd, r.substr(0, cut));
                send_some(fd, r.substr(cut));
                break;
            }
            case 3:
                drain(fd);
                break;
            case 4:
                if (fd >= 0) ::shutdown(fd, SHUT_WR);
                break;
            case 5:
                reset(fd);
                break;
            case 6:
                if (fd >= 0) {  // a client that hardly reads
                    const int small = 1024;
                    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
                }
                break;
            case 7:
                if (fd >= 0) ::close(fd);
                fd = -1;
                break;
            case 8: {  // the same well-formed request many times, never read
                const std::string r = well_formed(in, dialect);
                std::string many;
                for (int i = in.ConsumeIntegralInRange(1, 64); i > 0; --i) many += r;
                send_some(fd, many);
                break;
            }
        }
    }
    for (int& fd : fds) reset(fd);
    check_alive();
    if (server().stats().buffered_bytes > fuzz_limits().max_buffered_bytes) {
        finding("buffers over max_buffered_bytes");
    }
    return 0;
}
