/* The floor for launcher benchmarks: what no launcher can beat on this machine.
 *   floor N PROGRAM [ARGS...]            spawn N copies of PROGRAM (fork + exec) and reap them
 *   floor --restart N PROGRAM [ARGS...]  spawn N with TORCHELASTIC_RESTART_COUNT=0; when one fails,
 *                                        SIGTERM the rest, reap them, respawn N with
 * RESTART_COUNT=1, reap them Each worker gets RANK/LOCAL_RANK/WORLD_SIZE so the same bench worker
 * runs under every launcher. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t spawn(char** argv, int rank, int world, int restart) {
    pid_t pid = fork();
    if (pid == 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "%d", rank);
        setenv("RANK", buf, 1);
        setenv("LOCAL_RANK", buf, 1);
        snprintf(buf, sizeof buf, "%d", world);
        setenv("WORLD_SIZE", buf, 1);
        snprintf(buf, sizeof buf, "%d", restart);
        setenv("TORCHELASTIC_RESTART_COUNT", buf, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

int main(int argc, char** argv) {
    int restart_mode = argc > 1 && strcmp(argv[1], "--restart") == 0;
    int first = restart_mode ? 2 : 1;
    if (argc < first + 2) {
        fprintf(stderr, "usage: floor [--restart] N PROGRAM [ARGS...]\n");
        return 2;
    }
    int n = atoi(argv[first]);
    char** prog = argv + first + 1;
    pid_t* pids = calloc((size_t)n, sizeof *pids);
    for (int i = 0; i < n; ++i) pids[i] = spawn(prog, i, n, 0);
    int status, failed = 0;
    for (int reaped = 0; reaped < n; ++reaped) {
        pid_t pid = wait(&status);
        if (restart_mode && !failed && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            failed = 1;
            for (int i = 0; i < n; ++i)
                if (pids[i] != pid) kill(pids[i], SIGTERM);
        }
    }
    if (failed) {
        for (int i = 0; i < n; ++i) pids[i] = spawn(prog, i, n, 1);
        for (int i = 0; i < n; ++i) wait(&status);
    }
    free(pids);
    return 0;
}
