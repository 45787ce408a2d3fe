// What a worker inherits of ptrun's signal dispositions: ptrun's handlers and its ignored
// SIGPIPE go back to their default; a signal ignored by whoever started ptrun stays ignored.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <sstream>

#include "ptrun/launcher/process/spawn.hpp"
#include "temp_dir.hpp"

using namespace ptrun::launcher;

namespace {

void on_signal(int) {}

/// Restores one signal's disposition when the test ends.
class Disposition {
  public:
    Disposition(int sig, void (*handler)(int)) : sig_(sig) {
        struct sigaction sa {};
        sa.sa_handler = handler;
        ::sigaction(sig_, &sa, &old_);
    }
    ~Disposition() { ::sigaction(sig_, &old_, nullptr); }
    Disposition(const Disposition&) = delete;
    Disposition& operator=(const Disposition&) = delete;

  private:
    int sig_;
    struct sigaction old_ {};
};

/// The SigIgn mask of a worker spawned with `reset` (null: taken by spawn_worker).
unsigned long long ignored_in_worker(const sigset_t* reset) {
    test::TempDir dir;
    const auto out = dir.path / "status";
    SpawnRequest request;
    request.exec_path = "/bin/sh";
    request.argv = {"sh", "-c", "grep '^SigIgn:' /proc/self/status > " + out.string()};
    request.reset_signals = reset;
    const pid_t pid = spawn_worker(request);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    std::ifstream in(out);
    std::string word, hex;
    in >> word >> hex;
    REQUIRE(word == "SigIgn:");
    return std::stoull(hex, nullptr, 16);
}

bool has(unsigned long long mask, int sig) { return (mask >> (sig - 1)) & 1ULL; }

}  // namespace

TEST_CASE("a worker gets ptrun's handled and SIGPIPE signals back at their default",
          "[launcher][spawn]") {
    Disposition handled(SIGUSR1, on_signal);
    Disposition pipe(SIGPIPE, SIG_IGN);
    Disposition inherited(SIGHUP, SIG_IGN);  // as under nohup
    const sigset_t reset = signals_to_reset();
    CHECK(sigismember(&reset, SIGUSR1) == 1);
    CHECK(sigismember(&reset, SIGPIPE) == 1);
    CHECK(sigismember(&reset, SIGHUP) == 0);
    CHECK(sigismember(&reset, SIGURG) == 0);  // at its default already
    for (const sigset_t* given : {&reset, static_cast<const sigset_t*>(nullptr)}) {
        const auto ignored = ignored_in_worker(given);
        CHECK(has(ignored, SIGHUP));
        CHECK_FALSE(has(ignored, SIGPIPE));
        CHECK_FALSE(has(ignored, SIGUSR1));
    }
}
