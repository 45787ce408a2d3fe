// A native process parked in a known function, for the stack capture tests:
//   blocked_worker allreduce|loader
// prints "ready" once its main thread is about to block (a helper thread blocks too), then waits
// in fake_allreduce_wait() or load_next_batch() until killed.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

namespace hang_fixture {

void announce() {
    std::printf("ready\n");
    std::fflush(stdout);
}

[[gnu::noinline]] void fake_allreduce_wait() {
    announce();
    for (;;) ::pause();
}

[[gnu::noinline]] void load_next_batch() {
    announce();
    for (;;) ::pause();
}

}  // namespace hang_fixture

int main(int argc, char** argv) {
    const bool allreduce = argc == 2 && std::strcmp(argv[1], "allreduce") == 0;
    const bool loader = argc == 2 && std::strcmp(argv[1], "loader") == 0;
    if (!allreduce && !loader) return 2;
    std::thread([] {
        for (;;) ::pause();
    }).detach();
    if (allreduce) hang_fixture::fake_allreduce_wait();
    hang_fixture::load_next_batch();
}
