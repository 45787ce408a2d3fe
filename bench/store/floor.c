/* bench/store floor: the least a server can do to answer the load client's requests. One epoll
 * thread, level-triggered, legacy (1.13) wire: SET 0, COMPARE_SET 1, GET 2, ADD 3, CHECK 4, WAIT 5.
 * A tiny chained hash map, single-key waits, no limits, no validation beyond framing.
 * Usage: store_floor [PORT]   prints "port=N", serves until killed. */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct Entry {
    struct Entry* next;
    char* key;
    size_t klen;
    char* val;
    size_t vlen;
} Entry;
typedef struct {
    char* buf;
    size_t len, cap;
    char* wait_key;
    size_t wait_klen;
} Conn;

#define BUCKETS 65536
static Entry* table[BUCKETS];
static Conn* conns;
static int nconns, nwaiters;

static size_t hash(const char* k, size_t n) {
    size_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h % BUCKETS;
}
static Entry* find(const char* k, size_t n) {
    for (Entry* e = table[hash(k, n)]; e; e = e->next)
        if (e->klen == n && memcmp(e->key, k, n) == 0) return e;
    return NULL;
}
static void reply(int fd, const void* p, size_t n) {
    if (send(fd, p, n, MSG_NOSIGNAL) != (ssize_t)n) { /* the client vanished; epoll sees it */
    }
}
static void reply_bytes(int fd, const char* p, size_t n) {
    char out[8 + 256];
    uint64_t len = n;
    if (n > 256) {
        reply(fd, &len, 8);
        reply(fd, p, n);
        return;
    }
    memcpy(out, &len, 8);
    memcpy(out + 8, p, n);
    reply(fd, out, 8 + n);
}
static void wake(const char* k, size_t n) {
    if (nwaiters == 0) return;
    for (int fd = 0; fd < nconns; ++fd) {
        Conn* c = &conns[fd];
        if (c->wait_key && c->wait_klen == n && memcmp(c->wait_key, k, n) == 0) {
            free(c->wait_key);
            c->wait_key = NULL;
            --nwaiters;
            reply(fd, "\0", 1);
        }
    }
}
static void store(const char* k, size_t kn, const char* v, size_t vn) {
    Entry* e = find(k, kn);
    if (!e) {
        e = calloc(1, sizeof *e);
        e->key = malloc(kn + 1);
        memcpy(e->key, k, kn);
        e->klen = kn;
        size_t h = hash(k, kn);
        e->next = table[h];
        table[h] = e;
    }
    free(e->val);
    e->val = malloc(vn + 1);
    memcpy(e->val, v, vn);
    e->vlen = vn;
    wake(k, kn);
}

/* Reads a u64-prefixed string at *off; 0 if the buffer does not hold it yet. */
static int field(const Conn* c, size_t* off, const char** p, size_t* n) {
    uint64_t len;
    if (c->len < *off + 8) return 0;
    memcpy(&len, c->buf + *off, 8);
    if (c->len < *off + 8 + len) return 0;
    *p = c->buf + *off + 8;
    *n = len;
    *off += 8 + len;
    return 1;
}

/* Handles one complete request at the start of c->buf; returns its size, 0 if incomplete. */
static size_t handle(int fd, Conn* c) {
    size_t off = 1;
    const char *k, *v, *w;
    size_t kn, vn, wn;
    uint64_t count;
    int64_t delta;
    switch (c->buf[0]) {
        case 0:
            if (!field(c, &off, &k, &kn) || !field(c, &off, &v, &vn)) return 0;
            store(k, kn, v, vn);
            return off;
        case 1: {
            if (!field(c, &off, &k, &kn) || !field(c, &off, &v, &vn) || !field(c, &off, &w, &wn))
                return 0;
            Entry* e = find(k, kn);
            if (!e) {
                if (vn == 0) {
                    store(k, kn, w, wn);
                    reply_bytes(fd, w, wn);
                } else
                    reply_bytes(fd, v, vn);
            } else if (e->vlen == vn && memcmp(e->val, v, vn) == 0) {
                store(k, kn, w, wn);
                reply_bytes(fd, w, wn);
            } else
                reply_bytes(fd, e->val, e->vlen);
            return off;
        }
        case 2: {
            if (!field(c, &off, &k, &kn)) return 0;
            Entry* e = find(k, kn);
            reply_bytes(fd, e ? e->val : "", e ? e->vlen : 0);
            return off;
        }
        case 3: {
            if (!field(c, &off, &k, &kn) || c->len < off + 8) return 0;
            memcpy(&delta, c->buf + off, 8);
            off += 8;
            Entry* e = find(k, kn);
            char text[32];
            int64_t now = (e ? strtoll(e->val, NULL, 10) : 0) + delta;
            int tn = snprintf(text, sizeof text, "%lld", (long long)now);
            store(k, kn, text, (size_t)tn);
            reply(fd, &now, 8);
            return off;
        }
        case 4:
        case 5: {
            if (c->len < off + 8) return 0;
            memcpy(&count, c->buf + off, 8);
            off += 8;
            int all = 1;
            const char* missing = NULL;
            size_t missing_n = 0;
            for (uint64_t i = 0; i < count; ++i) {
                if (!field(c, &off, &k, &kn)) return 0;
                if (!find(k, kn)) {
                    all = 0;
                    missing = k;
                    missing_n = kn;
                }
            }
            if (c->buf[0] == 4 || all)
                reply(fd, all ? "\0" : "\1", 1);
            else {
                c->wait_key = malloc(missing_n);
                memcpy(c->wait_key, missing, missing_n);
                c->wait_klen = missing_n;
                ++nwaiters;
            }
            return off;
        }
        default:
            fprintf(stderr, "floor: unknown query %d\n", c->buf[0]);
            exit(1);
    }
}

int main(int argc, char** argv) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    nconns = (int)rl.rlim_cur;
    conns = calloc((size_t)nconns, sizeof *conns);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons(argc > 1 ? (uint16_t)atoi(argv[1]) : 0),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (bind(ls, (struct sockaddr*)&sa, sizeof sa) || listen(ls, SOMAXCONN)) {
        perror("floor: listen");
        return 1;
    }
    getsockname(ls, (struct sockaddr*)&sa, &sl);
    printf("port=%d\n", ntohs(sa.sin_port));
    fflush(stdout);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls}, events[1024];
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    for (;;) {
        int n = epoll_wait(ep, events, 1024, -1);
        for (int i = 0; i < n; ++i) {
            int fd = events[i].data.fd;
            if (fd == ls) {
                int c;
                while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    ev.data.fd = c;
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
                }
                continue;
            }
            Conn* c = &conns[fd];
            if (c->cap - c->len < 4096) {
                c->cap = c->cap * 2 + 8192;
                c->buf = realloc(c->buf, c->cap);
            }
            ssize_t r = recv(fd, c->buf + c->len, c->cap - c->len, 0);
            if (r <= 0) {
                free(c->buf);
                if (c->wait_key) {
                    free(c->wait_key);
                    --nwaiters;
                }
                memset(c, 0, sizeof *c);
                close(fd);
                continue;
            }
            c->len += (size_t)r;
            size_t used;
            while (c->len > 0 && (used = handle(fd, c)) > 0) {
                memmove(c->buf, c->buf + used, c->len - used);
                c->len -= used;
            }
        }
    }
}
