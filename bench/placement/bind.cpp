// What --numa-binding adds to starting a worker: apply_binding() alone (sched_setaffinity +
// set_mempolicy, as the child makes them), and a whole spawn (clone CLONE_VM|CLONE_VFORK, exec
// /bin/true, wait) with and without the binding, interleaved A/B in one run. Prints medians.
//   bench_placement_bind [spawns per side (default 400)] [calls (default 20000)]
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ptrun/placement/apply_binding.hpp"
#include "ptrun/placement/process_limits.hpp"
#include "ptrun/placement/topology.hpp"

using namespace ptrun::placement;
using Clock = std::chrono::steady_clock;

namespace {

struct Child {
    const PreparedBinding* binding;  ///< nullptr: start unbound
};

int child_main(void* raw) {
    auto* c = static_cast<Child*>(raw);
    if (c->binding && apply_binding(*c->binding).failed != BindingStep::None) ::_exit(126);
    char path[] = "/bin/true";
    char* argv[] = {path, nullptr};
    char* envp[] = {nullptr};
    ::execve(path, argv, envp);
    ::_exit(127);
}

double spawn_us(const PreparedBinding* binding) {
    constexpr std::size_t kStack = 64 * 1024;
    alignas(16) static char stack[kStack];
    Child c{binding};
    auto start = Clock::now();
    pid_t pid = ::clone(child_main, stack + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "spawn failed\n");
        std::exit(1);
    }
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    int spawns = argc > 1 ? std::atoi(argv[1]) : 400;
    int calls = argc > 2 ? std::atoi(argv[2]) : 20000;
    auto limits = read_process_limits();
    BindingRequest request;
    request.mode = BindingMode::Exclusive;
    // Two exclusive workers where the process has two cores or more: the child moves to half of
    // the CPUs, as a real binding makes it (the same CPUs as the parent would cost nothing).
    request.workers = limits.cpus.size() > 1 ? 2 : 1;
    request.allowed_cpus = limits.cpus;
    request.allowed_mems = limits.mems;
    auto plan = plan_bindings(read_topology(), request);
    auto prepared = prepare_binding(plan.at(0));
    // The process's own binding back after each call, so every call really changes it.
    auto restore = prepare_binding(WorkerBinding{limits.cpus, IdSet()});
    if (plan.size() > 1) std::swap(plan[0], plan[1]);  // bind away from where main runs first

    std::vector<double> apply;
    for (int i = 0; i < calls; ++i) {
        auto start = Clock::now();
        auto outcome = apply_binding(prepared);
        apply.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
        if (outcome.failed != BindingStep::None) {
            std::fprintf(stderr, "apply_binding failed: step %d errno %d\n",
                         static_cast<int>(outcome.failed), outcome.error);
            return 1;
        }
        apply_binding(restore);
    }
    std::vector<double> plain, bound;
    for (int i = 0; i < spawns; ++i) {  // interleaved: load changes hit both sides alike
        plain.push_back(spawn_us(nullptr));
        bound.push_back(spawn_us(&prepared));
    }
    std::printf("binding cpus %s mems %s (of cpus %s)\n", to_list(plan[0].cpus).c_str(),
                to_list(plan[0].mems).c_str(), to_list(limits.cpus).c_str());
    std::printf("apply_binding: median %.2f us over %d calls\n", median(apply), calls);
    std::printf(
        "spawn+exec+wait: unbound median %.1f us, bound median %.1f us, added %.1f us "
        "(%d each, interleaved)\n",
        median(plain), median(bound), median(bound) - median(plain), spawns);
    return 0;
}
