/* ptrun heartbeats, the worker's side: a C header (C11 or later with POSIX, or C++), usable alone.
 *
 * A worker tells its launcher "I made progress" by bumping a counter in a small shared-memory
 * record that the launcher created and named in the environment variable PTRUN_HEARTBEAT_FILE.
 * A beat is two stores to memory the worker has mapped (a coarse clock read and an atomic add):
 * no system call, no lock, about 10 ns (bench/heartbeat). The launcher reads the record when it
 * needs to (never the other way round): a worker never waits for it. Without the variable every
 * call below is a no-op on a NULL record, so code that beats runs unchanged anywhere. The
 * record's first beat also tells the launcher's start-up timeline (PTRUN_EVENTS_SOCKET) once.
 *
 *     ptrun_heartbeat_record* hb = ptrun_heartbeat_open_env();   // NULL: not under ptrun
 *     for (;;) { train_step(); ptrun_heartbeat_beat(hb); }
 *     ptrun_heartbeat_enter(hb, "checkpoint", 600.0);             // a long step, its own deadline
 *     save_checkpoint();
 *     ptrun_heartbeat_leave(hb);
 *     ptrun_heartbeat_close(hb);
 *
 * The record format (version 1) is the protocol; docs/heartbeat.md describes it for writers in
 * other languages, and python/ptrun/heartbeat.py is the Python writer. All integers are in the
 * host's native byte order (the launcher and its workers share one host); times are nanoseconds
 * of CLOCK_MONOTONIC, which every process of one host (and one time namespace) shares. Beats read
 * CLOCK_MONOTONIC_COARSE, the same timeline updated once per kernel tick (1-10 ms behind at most,
 * never ahead), at a quarter of the cost: plenty for hang timeouts counted in seconds.
 *
 * Compile C with the POSIX API visible (-std=gnu11, or -D_POSIX_C_SOURCE=200809L with -std=c11);
 * the atomics are GCC/Clang builtins. Beats are safe from any thread; enter/leave must come from
 * one thread at a time (they update the section fields under a sequence lock). */
#ifndef PTRUN_PROGRESS_HEARTBEAT_H
#define PTRUN_PROGRESS_HEARTBEAT_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The variable naming the worker's record file (set by the launcher, one file per worker). */
#define PTRUN_HEARTBEAT_ENV "PTRUN_HEARTBEAT_FILE"
/* The launcher's start-up timeline channel: "fd:N", an inherited AF_UNIX datagram socket. */
#define PTRUN_EVENTS_ENV "PTRUN_EVENTS_SOCKET"
/* The record's first 8 bytes, and its version. */
#define PTRUN_HEARTBEAT_MAGIC "ptrun-hb"
#define PTRUN_HEARTBEAT_VERSION 1u
/* Longest section name kept, in bytes of UTF-8 (longer names are cut at a character boundary). */
#define PTRUN_HEARTBEAT_NAME_MAX 95
/* Section timeouts are capped here (about 31 years); larger ones count as no deadline. */
#define PTRUN_HEARTBEAT_TIMEOUT_MAX_S 1e9

/* The record, 256 bytes at offset 0 of the file; the launcher's hot fields each start a 64-byte
 * line. Writers change only progress_count, last_progress_ns, writer_pid and the section fields. */
typedef struct ptrun_heartbeat_record {
    char magic[8];                /*   0: "ptrun-hb", no NUL */
    uint32_t version;             /*   8: 1 */
    uint32_t size;                /*  12: bytes of this record (256); readers accept more */
    int32_t local_rank;           /*  16: the worker's local rank (written by the launcher) */
    int32_t writer_pid;           /*  20: the last process that opened the record (0: none yet) */
    uint64_t created_ns;          /*  24: when the launcher made the record (CLOCK_MONOTONIC) */
    uint8_t reserved0[32];        /*  32 */
    uint64_t progress_count;      /*  64: beats so far; each beat adds 1 (atomic) */
    uint64_t last_progress_ns;    /*  72: time of the latest beat (0: never beaten) */
    uint8_t reserved1[48];        /*  80 */
    uint64_t section_seq;         /* 128: sequence lock, odd while a writer changes the section */
    uint64_t section_started_ns;  /* 136: when the open section began (0: no section open) */
    uint64_t section_deadline_ns; /* 144: when it must be left (0: no deadline) */
    uint64_t reserved2;           /* 152 */
    char section_name[PTRUN_HEARTBEAT_NAME_MAX + 1]; /* 160: NUL-terminated UTF-8 */
} ptrun_heartbeat_record;

#ifdef __cplusplus
#define PTRUN_HEARTBEAT_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define PTRUN_HEARTBEAT_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
PTRUN_HEARTBEAT_STATIC_ASSERT(sizeof(ptrun_heartbeat_record) == 256, "record is 256 bytes");
PTRUN_HEARTBEAT_STATIC_ASSERT(offsetof(ptrun_heartbeat_record, progress_count) == 64, "layout");
PTRUN_HEARTBEAT_STATIC_ASSERT(offsetof(ptrun_heartbeat_record, section_seq) == 128, "layout");
PTRUN_HEARTBEAT_STATIC_ASSERT(offsetof(ptrun_heartbeat_record, section_name) == 160, "layout");

/* Nanoseconds of CLOCK_MONOTONIC (a vDSO call, no system call on Linux). */
static inline uint64_t ptrun_heartbeat_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC as of the last kernel tick (CLOCK_MONOTONIC_COARSE: ~4x cheaper; where the
 * system lacks it, CLOCK_MONOTONIC itself). */
static inline uint64_t ptrun_heartbeat_coarse_now_ns(void) {
    struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Maps the record in `path` for writing. NULL with errno set when the file cannot be opened or
 * mapped, or is not a version-1 heartbeat record (EINVAL). Does not block beyond the open(). */
static inline ptrun_heartbeat_record* ptrun_heartbeat_open(const char* path) {
    struct stat st;
    void* map;
    ptrun_heartbeat_record* hb;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return NULL;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(ptrun_heartbeat_record)) {
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    map = mmap(NULL, sizeof(ptrun_heartbeat_record), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return NULL;
    hb = (ptrun_heartbeat_record*)map;
    if (memcmp(hb->magic, PTRUN_HEARTBEAT_MAGIC, 8) != 0 ||
        hb->version != PTRUN_HEARTBEAT_VERSION || hb->size < sizeof(ptrun_heartbeat_record)) {
        munmap(map, sizeof(ptrun_heartbeat_record));
        errno = EINVAL;
        return NULL;
    }
    __atomic_store_n(&hb->writer_pid, (int32_t)getpid(), __ATOMIC_RELAXED);
    return hb;
}

/* ptrun_heartbeat_open($PTRUN_HEARTBEAT_FILE). NULL with errno 0 when the variable is unset or
 * empty (not under ptrun: beats are no-ops), NULL with errno set when the file is unusable. */
static inline ptrun_heartbeat_record* ptrun_heartbeat_open_env(void) {
    const char* path = getenv(PTRUN_HEARTBEAT_ENV);
    if (path == NULL || *path == '\0') {
        errno = 0;
        return NULL;
    }
    return ptrun_heartbeat_open(path);
}

/* The record's first beat: "ptrun-event 1 first_progress NS", one datagram on the launcher's
 * events channel, the inherited descriptor $PTRUN_EVENTS_SOCKET names ("fd:4"), when set and
 * when that descriptor is still an AF_UNIX datagram socket (a program may have put another one
 * there). Never blocks; errno is left as it was. */
static inline void ptrun_heartbeat_first_beat_(void) {
    const char* address = getenv(PTRUN_EVENTS_ENV);
    char text[64];
    char* end = NULL;
    long fd;
    int len, type = 0;
    struct sockaddr_storage bound;
    socklen_t size = sizeof bound;
    int saved = errno;
    if (address == NULL || strncmp(address, "fd:", 3) != 0 || address[3] < '0' || address[3] > '9')
        return;
    fd = strtol(address + 3, &end, 10);
    if (*end != '\0' || fd < 0 || fd > 1 << 20 ||
        getsockname((int)fd, (struct sockaddr*)&bound, &size) != 0 || bound.ss_family != AF_UNIX ||
        (size = sizeof type, getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &size)) != 0 ||
        type != SOCK_DGRAM) {
        errno = saved;
        return;
    }
    len = snprintf(text, sizeof text, "ptrun-event 1 first_progress %llu",
                   (unsigned long long)ptrun_heartbeat_now_ns());
    (void)send((int)fd, text, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL);
    errno = saved;
}

/* One beat: "this worker made progress now". Thread-safe; a no-op on NULL. */
static inline void ptrun_heartbeat_beat(ptrun_heartbeat_record* hb) {
    if (hb == NULL) return;
    __atomic_store_n(&hb->last_progress_ns, ptrun_heartbeat_coarse_now_ns(), __ATOMIC_RELAXED);
    if (__atomic_fetch_add(&hb->progress_count, 1, __ATOMIC_RELEASE) == 0)
        ptrun_heartbeat_first_beat_();
}

/* Writes the section fields under the sequence lock (one writer thread at a time). Every field
 * store is a release store, so a reader that sees any of them with an acquire load also sees the
 * odd sequence number before it; no fence (ThreadSanitizer models none), no plain write a reader
 * could race with. */
static inline void ptrun_heartbeat_set_section_(ptrun_heartbeat_record* hb, uint64_t started,
                                                uint64_t deadline, const char* name) {
    size_t n = 0;
    size_t i;
    uint64_t seq = __atomic_load_n(&hb->section_seq, __ATOMIC_RELAXED);
    __atomic_store_n(&hb->section_seq, seq + 1, __ATOMIC_RELAXED);
    if (name != NULL) {
        while (n < PTRUN_HEARTBEAT_NAME_MAX && name[n] != '\0') ++n;
        /* cut at a character boundary: never leave half of a UTF-8 sequence */
        if (name[n] != '\0') {
            while (n > 0 && ((unsigned char)name[n] & 0xC0u) == 0x80u) --n;
        }
    }
    for (i = 0; i < n; ++i) __atomic_store_n(&hb->section_name[i], name[i], __ATOMIC_RELEASE);
    __atomic_store_n(&hb->section_name[n], '\0', __ATOMIC_RELEASE);
    __atomic_store_n(&hb->section_started_ns, started, __ATOMIC_RELEASE);
    __atomic_store_n(&hb->section_deadline_ns, deadline, __ATOMIC_RELEASE);
    __atomic_store_n(&hb->section_seq, seq + 2, __ATOMIC_RELEASE);
}

/* Announces a long section (checkpoint save, evaluation) named `name` that must end within
 * `timeout_s` seconds: until then the launcher does not count this worker's silence as a hang;
 * past it, it does. timeout_s <= 0, NaN or infinite: no deadline (the hang check waits until
 * ptrun_heartbeat_leave). Entering replaces any open section, and counts as a beat. */
static inline void ptrun_heartbeat_enter(ptrun_heartbeat_record* hb, const char* name,
                                         double timeout_s) {
    uint64_t now;
    uint64_t deadline = 0;
    if (hb == NULL) return;
    now = ptrun_heartbeat_now_ns();
    if (timeout_s > 0 && timeout_s <= PTRUN_HEARTBEAT_TIMEOUT_MAX_S) {
        deadline = now + (uint64_t)(timeout_s * 1e9);
    }
    ptrun_heartbeat_set_section_(hb, now, deadline, name);
    ptrun_heartbeat_beat(hb);
}

/* Ends the open section (if any); counts as a beat. */
static inline void ptrun_heartbeat_leave(ptrun_heartbeat_record* hb) {
    if (hb == NULL) return;
    ptrun_heartbeat_set_section_(hb, 0, 0, NULL);
    ptrun_heartbeat_beat(hb);
}

/* Unmaps the record; a no-op on NULL. The file stays (the launcher owns it). */
static inline void ptrun_heartbeat_close(ptrun_heartbeat_record* hb) {
    if (hb != NULL) munmap(hb, sizeof(ptrun_heartbeat_record));
}

#ifdef __cplusplus
}
#endif

#endif /* PTRUN_PROGRESS_HEARTBEAT_H */
