/* Restart-latency worker, the same under every launcher. Attempt 0: local rank 0 writes the time
 * of its failure to $BENCH_DIR/fail and exits 1; the others wait to be stopped. Attempt 1: every
 * worker writes its start time to $BENCH_DIR/start.<rank> and exits 0. Times are CLOCK_REALTIME ns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void stamp(const char* dir, const char* name) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    fclose(f);
}

int main(void) {
    const char* dir = getenv("BENCH_DIR");
    const char* rank = getenv("LOCAL_RANK");
    const char* restart = getenv("TORCHELASTIC_RESTART_COUNT");
    if (!dir || !rank || !restart) return 2;
    if (atoi(restart) == 0) {
        if (atoi(rank) == 0) {
            stamp(dir, "fail");
            return 1;
        }
        alarm(60);
        pause();
        return 0;
    }
    char name[64];
    snprintf(name, sizeof name, "start.%s", rank);
    stamp(dir, name);
    return 0;
}
