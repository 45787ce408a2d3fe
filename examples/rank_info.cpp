// A tiny worker that prints what ptrun told it: the README's first demo until `train` exists.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main() {
    auto get = [](const char* name) {
        const char* v = std::getenv(name);
        return v ? v : "?";
    };
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::printf(
        "rank %s of %s (local rank %s of %s, node %s) on %s, pid %d; store %s:%s; restart %s\n",
        get("RANK"), get("WORLD_SIZE"), get("LOCAL_RANK"), get("LOCAL_WORLD_SIZE"),
        get("GROUP_RANK"), host, ::getpid(), get("MASTER_ADDR"), get("MASTER_PORT"),
        get("TORCHELASTIC_RESTART_COUNT"));
    return 0;
}
