/* bench/store ranks: many simulated PyTorch ranks in one process, against any TCPStore-wire server
 * (issue 40). Each simulated rank does, over one TCP connection, what a rank does in
 * init_process_group + torch's store barrier:
 *   [VALIDATE]  SET rank/<r>/addr  (rank 0: SET master/addr)  ADD barrier/count 1
 *   the rank whose ADD returns the world size: SET barrier/last "1"
 *   WAIT [barrier/last] (until STOP_WAITING)  GET master/addr
 * and keeps its connection until every rank of this process is done. One epoll thread,
 * non-blocking sockets, at most --inflight connects in progress. Started as a ptrun (or torchrun)
 * worker it connects to MASTER_ADDR:MASTER_PORT and simulates ranks
 * [RANK x R, RANK x R + R) of a world of WORLD_SIZE x R.
 *
 * Usage: bench_store_ranks --ranks R [--world W] [--first F] [--host H --port P]
 *            [--dialect modern|legacy] [--inflight N] [--timeout-s S] [--source-seed K]
 * Prints one JSON line: {"ranks", "world", "first", "connected_ms", "barrier_ms", "done_ms",
 * "rss_kb", "start_unix_ns", "connect_retries"}; times in ms from this process's start.
 * Exit codes: 0 done; 1 usage, set-up or --timeout-s reached (what it reached goes to stderr);
 * 2 protocol error (an unexpected reply or a closed connection: the rank and what happened). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

enum Phase { IDLE, CONNECTING, RETRY, ADDING, WAITING, GETTING, DONE };
static const char* const kPhase[] = {"not started",   "connecting",     "waiting to retry",
                                     "the ADD reply", "the WAIT reply", "the GET reply",
                                     "done"};

#define RBUF 64  /* the longest reply read: GET's u64 length + a value of at most 56 bytes */
#define WBUF 256 /* the longest batch of requests written at once */

typedef struct {
    int fd;
    uint8_t phase;
    uint8_t rlen;
    uint8_t out_armed; /* EPOLLOUT asked for: a batch did not fit the socket at once */
    uint16_t wlen, woff;
    int64_t retry_at_ms;
    unsigned char rbuf[RBUF];
    char wbuf[WBUF];
} Rank;

typedef struct {
    long ranks, world, first, inflight, seed;
    double timeout_s;
    const char* host;
    const char* port;
    int modern;
} Args;

static struct timespec t0;
static Args args;
static Rank* ranks;
static struct sockaddr_storage dest;
static socklen_t dest_len;
static int spread_sources;
static int ep;
static long connecting, connected, added, passed, got, retries;
static int64_t connected_ms, barrier_ms, done_ms;
static long next_to_start;
/* Ranks waiting to retry a refused connect, in the order they were refused (FIFO: one delay). */
static long* retry_q;
static long retry_head, retry_tail;
#define RETRY_DELAY_MS 100

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)(t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
}

static void report_progress(FILE* f) {
    fprintf(f,
            "%ld of %ld ranks connected, %ld added, %ld passed the barrier, %ld got "
            "master/addr (%ld connects in progress, %ld retries) at %lld ms\n",
            connected, args.ranks, added, passed, got, connecting, retries, (long long)now_ms());
}

static void die(int code, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ranks: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

/* A protocol error of simulated rank index i: says which rank and what, exits 2. */
static void protocol_error(long i, const char* what) {
    fprintf(stderr, "ranks: rank %ld (%s:%s): %s while waiting for %s\n", args.first + i, args.host,
            args.port, what, kPhase[ranks[i].phase]);
    fputs("ranks: reached ", stderr);
    report_progress(stderr);
    exit(2);
}

static long parse_long(const char* flag, const char* v, long lo, long hi) {
    char* end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || end == v || n < lo || n > hi)
        die(1, "%s: expected an integer in [%ld, %ld], got '%s'", flag, lo, hi, v);
    return n;
}

static long env_long(const char* name, long dflt) {
    const char* v = getenv(name);
    return v && *v ? parse_long(name, v, 0, 1L << 40) : dflt;
}

static void parse(int argc, char** argv) {
    long world = -1, first = -1;
    args.inflight = 512;
    args.timeout_s = 120;
    args.modern = 1;
    args.seed = -1;
    args.ranks = -1;
    for (int i = 1; i < argc; ++i) {
        const char* f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            puts(
                "usage: bench_store_ranks --ranks R [--world W] [--first F] [--host H --port P] "
                "[--dialect modern|legacy] [--inflight N] [--timeout-s S] [--source-seed K]");
            exit(0);
        }
        if (i + 1 >= argc) die(1, "%s needs a value (see --help)", f);
        const char* v = argv[++i];
        if (!strcmp(f, "--ranks"))
            args.ranks = parse_long(f, v, 1, 1L << 24);
        else if (!strcmp(f, "--world"))
            world = parse_long(f, v, 1, 1L << 40);
        else if (!strcmp(f, "--first"))
            first = parse_long(f, v, 0, 1L << 40);
        else if (!strcmp(f, "--host"))
            args.host = v;
        else if (!strcmp(f, "--port"))
            args.port = v;
        else if (!strcmp(f, "--inflight"))
            args.inflight = parse_long(f, v, 1, 1L << 20);
        else if (!strcmp(f, "--source-seed"))
            args.seed = parse_long(f, v, 0, 1L << 40);
        else if (!strcmp(f, "--timeout-s")) {
            char* end;
            args.timeout_s = strtod(v, &end);
            if (*end || end == v || !(args.timeout_s > 0)) die(1, "--timeout-s: '%s'", v);
        } else if (!strcmp(f, "--dialect")) {
            if (strcmp(v, "modern") && strcmp(v, "legacy")) die(1, "--dialect: modern or legacy");
            args.modern = !strcmp(v, "modern");
        } else
            die(1, "unknown flag %s (see --help)", f);
    }
    if (args.ranks < 0) die(1, "--ranks R is required (see --help)");
    if (!args.host) args.host = getenv("MASTER_ADDR");
    if (!args.port) args.port = getenv("MASTER_PORT");
    if (!args.host || !args.port || !*args.host || !*args.port)
        die(1, "no store: give --host and --port, or run as a worker (MASTER_ADDR, MASTER_PORT)");
    long rank = env_long("RANK", 0);
    args.world = world > 0 ? world : env_long("WORLD_SIZE", 1) * args.ranks;
    args.first = first >= 0 ? first : rank * args.ranks;
    if (args.seed < 0) args.seed = args.first / (args.ranks ? args.ranks : 1);
    if (args.first + args.ranks > args.world)
        die(1, "ranks [%ld, %ld) lie outside the world of %ld", args.first, args.first + args.ranks,
            args.world);
}

static void resolve(void) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(args.host, args.port, &hints, &res);
    if (rc) die(1, "cannot resolve %s:%s: %s", args.host, args.port, gai_strerror(rc));
    memcpy(&dest, res->ai_addr, res->ai_addrlen);
    dest_len = res->ai_addrlen;
    freeaddrinfo(res);
    if (dest.ss_family == AF_INET) {
        uint32_t a = ntohl(((struct sockaddr_in*)&dest)->sin_addr.s_addr);
        spread_sources = (a >> 24) == 127;
    }
}

/* Requests. The modern (2.2+) dialect numbers every query one higher and starts with VALIDATE. */
static void put(Rank* r, const void* p, size_t n) {
    if (r->wlen + n > WBUF) die(1, "internal: request batch over %d bytes", WBUF);
    memcpy(r->wbuf + r->wlen, p, n);
    r->wlen = (uint16_t)(r->wlen + n);
}
static void put_code(Rank* r, uint8_t legacy) {
    uint8_t c = (uint8_t)(legacy + (args.modern ? 1 : 0));
    put(r, &c, 1);
}
static void put_str(Rank* r, const char* s, size_t n) {
    uint64_t len = n;
    put(r, &len, 8);
    put(r, s, n);
}
static void put_set(Rank* r, const char* k, const char* v, size_t vn) {
    put_code(r, 0);
    put_str(r, k, strlen(k));
    put_str(r, v, vn);
}
static void put_wait_last(Rank* r) {
    uint64_t n = 1;
    put_code(r, 5);
    put(r, &n, 8);
    put_str(r, "barrier/last", 12);
}

static void arm(long i, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_MOD, ranks[i].fd, &ev)) die(1, "epoll_ctl: %s", strerror(errno));
}

/* Writes what is pending; arms EPOLLOUT if the socket would block. */
static void flush(long i) {
    Rank* r = &ranks[i];
    while (r->woff < r->wlen) {
        ssize_t n = send(r->fd, r->wbuf + r->woff, r->wlen - r->woff, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) {
            if (!r->out_armed) arm(i, EPOLLIN | EPOLLOUT);
            r->out_armed = 1;
            return;
        }
        if (n < 0) protocol_error(i, strerror(errno));
        r->woff = (uint16_t)(r->woff + n);
    }
    r->woff = r->wlen = 0;
    if (r->out_armed) arm(i, EPOLLIN);
    r->out_armed = 0;
}

static void connect_failed(long i);

static void start_connect(long i) {
    Rank* r = &ranks[i];
    int fd = socket(dest.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0) die(1, "socket (rank %ld): %s", args.first + i, strerror(errno));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (spread_sources) {
        /* 127.a.b.c: a and b from the rank's index, c from the seed (RANK), so that processes on
         * one machine do not share sources; the port is chosen at connect, per destination. */
        struct sockaddr_in src = {.sin_family = AF_INET};
        uint32_t a = (uint32_t)(1 + i / 250 % 250), b = (uint32_t)(i % 250 + 1);
        uint32_t c = (uint32_t)(1 + args.seed % 254);
        src.sin_addr.s_addr = htonl(127u << 24 | a << 16 | b << 8 | c);
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        if (bind(fd, (struct sockaddr*)&src, sizeof src))
            die(1, "bind to a 127/8 source (rank %ld): %s", args.first + i, strerror(errno));
    }
    r->fd = fd;
    r->phase = CONNECTING;
    ++connecting;
    struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = (uint64_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) die(1, "epoll_ctl: %s", strerror(errno));
    if (connect(fd, (struct sockaddr*)&dest, dest_len) == 0 || errno == EINPROGRESS) return;
    if (errno == ECONNREFUSED || errno == ETIMEDOUT || errno == ECONNRESET) {
        connect_failed(i);
        return;
    }
    die(1, "connect (rank %ld) to %s:%s: %s%s", args.first + i, args.host, args.port,
        strerror(errno), errno == EADDRNOTAVAIL ? " (no free source port)" : "");
}

/* A connect that failed before the server took it: retried after RETRY_DELAY_MS, as torch's
 * clients retry until their timeout (the server may not listen yet, or its backlog overflowed). */
static void connect_failed(long i) {
    Rank* r = &ranks[i];
    epoll_ctl(ep, EPOLL_CTL_DEL, r->fd, NULL);
    close(r->fd);
    r->fd = -1;
    r->phase = RETRY;
    r->retry_at_ms = now_ms() + RETRY_DELAY_MS;
    --connecting;
    ++retries;
    retry_q[retry_tail++ % args.ranks] = i;
}

static void on_connected(long i) {
    Rank* r = &ranks[i];
    long rank = args.first + i;
    char key[64], val[64];
    --connecting;
    ++connected;
    connected_ms = now_ms();
    r->out_armed = 1; /* registered for EPOLLOUT alone while connecting */
    if (args.modern) {
        static const unsigned char validate[5] = {0x00, 0xCE, 0xF7, 0x85, 0x3C}; /* 0x3C85F7CE */
        put(r, validate, sizeof validate);
    }
    snprintf(key, sizeof key, "rank/%ld/addr", rank);
    int vn = snprintf(val, sizeof val, "127.0.0.1:%ld", 20000 + rank % 40000);
    put_set(r, key, val, (size_t)vn);
    if (rank == 0) put_set(r, "master/addr", "127.0.0.1:29500", 15);
    int64_t one = 1;
    put_code(r, 3);
    put_str(r, "barrier/count", 13);
    put(r, &one, 8);
    r->phase = ADDING;
    flush(i);
}

/* Consumes the reply in r->rbuf once complete and sends the rank's next requests. */
static void on_reply(long i) {
    Rank* r = &ranks[i];
    char what[128];
    switch (r->phase) {
        case ADDING: {
            if (r->rlen < 8) return;
            int64_t v;
            memcpy(&v, r->rbuf, 8);
            if (r->rlen > 8) protocol_error(i, "bytes after the ADD reply");
            if (v < 1 || v > args.world) {
                snprintf(what, sizeof what, "ADD barrier/count returned %lld, outside [1, %ld]%s",
                         (long long)v, args.world, v > args.world ? " (a store used before?)" : "");
                protocol_error(i, what);
            }
            ++added;
            if (v == args.world) put_set(r, "barrier/last", "1", 1);
            put_wait_last(r);
            r->phase = WAITING;
            r->rlen = 0;
            flush(i);
            return;
        }
        case WAITING:
            if (r->rlen < 1) return;
            if (r->rlen > 1 || r->rbuf[0] != 0) {
                snprintf(what, sizeof what, "WAIT replied %u (%u bytes), not STOP_WAITING (0)",
                         r->rbuf[0], r->rlen);
                protocol_error(i, what);
            }
            ++passed;
            barrier_ms = now_ms();
            put_code(r, 2);
            put_str(r, "master/addr", 11);
            r->phase = GETTING;
            r->rlen = 0;
            flush(i);
            return;
        case GETTING: {
            if (r->rlen < 8) return;
            uint64_t n;
            memcpy(&n, r->rbuf, 8);
            if (n == 0 || n > RBUF - 8) {
                snprintf(what, sizeof what, "GET master/addr returned %llu bytes",
                         (unsigned long long)n);
                protocol_error(i, what);
            }
            if (r->rlen < 8 + n) return;
            if (r->rlen > 8 + n) protocol_error(i, "bytes after the GET reply");
            ++got;
            done_ms = now_ms();
            r->phase = DONE;
            r->rlen = 0;
            arm(i, EPOLLIN); /* a close or a stray byte from the server is still an error */
            return;
        }
        default:
            protocol_error(i, "unexpected bytes from the server");
    }
}

static void on_event(long i, uint32_t events) {
    Rank* r = &ranks[i];
    if (r->phase == CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == EAGAIN) {
            connect_failed(i);
            return;
        }
        if (err)
            die(1, "connect (rank %ld) to %s:%s: %s", args.first + i, args.host, args.port,
                strerror(err));
        on_connected(i);
        return;
    }
    if (events & EPOLLOUT) flush(i);
    if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP))) return;
    for (;;) {
        ssize_t n = recv(r->fd, r->rbuf + r->rlen, (size_t)(RBUF - r->rlen), 0);
        if (n < 0 && errno == EAGAIN) return;
        if (n < 0) protocol_error(i, strerror(errno));
        if (n == 0) protocol_error(i, "the server closed the connection");
        r->rlen = (uint8_t)(r->rlen + n);
        on_reply(i);
        if (r->rlen == RBUF) protocol_error(i, "a reply longer than expected");
    }
}

static long vm_hwm_kb(void) {
    FILE* f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

int main(int argc, char** argv) {
    struct timespec wall;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_REALTIME, &wall);
    parse(argc, argv);

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if ((rlim_t)args.ranks + 16 > rl.rlim_cur)
        die(1,
            "--ranks %ld needs %ld descriptors, but this process may open %llu (RLIMIT_NOFILE, "
            "hard limit %llu): give fewer --ranks per process",
            args.ranks, args.ranks + 16, (unsigned long long)rl.rlim_cur,
            (unsigned long long)rl.rlim_max);

    resolve();
    ranks = calloc((size_t)args.ranks, sizeof *ranks);
    retry_q = calloc((size_t)args.ranks, sizeof *retry_q);
    if (!ranks || !retry_q) die(1, "out of memory for %ld ranks", args.ranks);
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die(1, "epoll_create1: %s", strerror(errno));

    const int64_t deadline = (int64_t)(args.timeout_s * 1000);
    struct epoll_event events[1024];
    while (got < args.ranks) {
        int64_t now = now_ms();
        if (now >= deadline) {
            fprintf(stderr, "ranks: --timeout-s %g reached: ", args.timeout_s);
            report_progress(stderr);
            return 1;
        }
        /* Refused connects first, in order, then new ones, within --inflight. */
        while (connecting < args.inflight && retry_head < retry_tail &&
               ranks[retry_q[retry_head % args.ranks]].retry_at_ms <= now)
            start_connect(retry_q[retry_head++ % args.ranks]);
        while (connecting < args.inflight && next_to_start < args.ranks)
            start_connect(next_to_start++);
        int64_t wait_ms = deadline - now;
        if (retry_head < retry_tail && connecting < args.inflight) {
            int64_t until = ranks[retry_q[retry_head % args.ranks]].retry_at_ms - now;
            if (until < wait_ms) wait_ms = until < 1 ? 1 : until;
        }
        int n = epoll_wait(ep, events, 1024, (int)(wait_ms > 1000 ? 1000 : wait_ms));
        if (n < 0 && errno != EINTR) die(1, "epoll_wait: %s", strerror(errno));
        for (int k = 0; k < n; ++k) on_event((long)events[k].data.u64, events[k].events);
    }
    printf(
        "{\"ranks\": %ld, \"world\": %ld, \"first\": %ld, \"connected_ms\": %lld, "
        "\"barrier_ms\": %lld, \"done_ms\": %lld, \"rss_kb\": %ld, \"start_unix_ns\": %lld, "
        "\"connect_retries\": %ld}\n",
        args.ranks, args.world, args.first, (long long)connected_ms, (long long)barrier_ms,
        (long long)done_ms, vm_hwm_kb(), (long long)wall.tv_sec * 1000000000LL + wall.tv_nsec,
        retries);
    fflush(stdout);
    for (long i = 0; i < args.ranks; ++i) close(ranks[i].fd);
    return 0;
}
