#include "ptrun/placement/apply_binding.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>

#include "ptrun/placement/process_limits.hpp"
#include "ptrun/placement/topology.hpp"

using namespace ptrun::placement;

namespace {

struct ChildArgs {
    const PreparedBinding* binding;
    int out_fd;
    BindingOutcome outcome;  ///< written by the child (shared memory)
};

/// The child of a CLONE_VM | CLONE_VFORK clone, as launcher/src/spawn.cpp makes one: binds,
/// then execs cat to show its own /proc/self/status and numa_maps.
int bound_child(void* raw) {
    auto* a = static_cast<ChildArgs*>(raw);
    a->outcome = apply_binding(*a->binding);
    if (a->outcome.failed != BindingStep::None) ::_exit(126);
    ::dup2(a->out_fd, STDOUT_FILENO);
    char cat[] = "/bin/cat", status[] = "/proc/self/status", maps[] = "/proc/self/numa_maps";
    char* argv[] = {cat, status, maps, nullptr};
    char* envp[] = {nullptr};
    ::execve(cat, argv, envp);
    ::_exit(127);
}

/// What a worker started with `binding` reports about itself.
std::string run_bound(const WorkerBinding& binding) {
    auto prepared = prepare_binding(binding);
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    ChildArgs args{&prepared, fds[1], {}};
    constexpr std::size_t kStack = 64 * 1024;
    alignas(16) static char stack[kStack];
    pid_t pid = ::clone(bound_child, stack + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
    ::close(fds[1]);
    REQUIRE(pid > 0);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    INFO("binding outcome step " << static_cast<int>(args.outcome.failed) << " errno "
                                 << args.outcome.error);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return out;
}

std::string field(const std::string& status, const std::string& key) {
    auto at = status.find(key + ":");
    REQUIRE(at != std::string::npos);
    auto begin = status.find_first_not_of(" \t", at + key.size() + 1);
    return status.substr(begin, status.find('\n', begin) - begin);
}

}  // namespace

TEST_CASE("a bound worker runs on its CPUs with memory preferred on its node",
          "[placement][apply]") {
    auto limits = read_process_limits();
    REQUIRE_FALSE(limits.cpus.empty());
    WorkerBinding b{IdSet({limits.cpus.front()}), IdSet({0})};
    auto report = run_bound(b);
    CHECK(field(report, "Cpus_allowed_list") == std::to_string(limits.cpus.front()));
    CHECK(field(report, "Mems_allowed_list") == to_list(*limits.mems));  // the cpuset's, unchanged
    CHECK(report.find(" prefer:0 ") != std::string::npos);  // numa_maps: the task's policy
}

TEST_CASE("a worker without memory nodes keeps the default memory policy", "[placement][apply]") {
    auto limits = read_process_limits();
    auto report = run_bound(WorkerBinding{limits.cpus, IdSet()});
    CHECK(field(report, "Cpus_allowed_list") == to_list(limits.cpus));
    CHECK(report.find(" default ") != std::string::npos);
    CHECK(report.find("prefer") == std::string::npos);
}

TEST_CASE("exclusive binding gives two workers on this machine disjoint CPUs",
          "[placement][apply]") {
    auto limits = read_process_limits();
    if (limits.cpus.size() < 2) {
        WARN("this process may use one CPU only (" << to_list(limits.cpus)
                                                   << "): nothing to split");
        return;
    }
    BindingRequest r;
    r.mode = BindingMode::Exclusive;
    r.workers = 2;
    r.allowed_cpus = limits.cpus;
    r.allowed_mems = limits.mems;
    auto plan = plan_bindings(read_topology(), r);
    REQUIRE(plan.size() == 2);
    auto first = parse_id_list(field(run_bound(plan[0]), "Cpus_allowed_list"));
    auto second = parse_id_list(field(run_bound(plan[1]), "Cpus_allowed_list"));
    CHECK(first == plan[0].cpus);
    CHECK(second == plan[1].cpus);
    CHECK_FALSE(first.empty());
    CHECK_FALSE(second.empty());
    CHECK((first & second).empty());
    CHECK((first | second) == ((first | second) & limits.cpus));
}

TEST_CASE("binding to a CPU outside the machine fails with the call that refused it",
          "[placement][apply]") {
    // CPU 4000 exists on no test machine: sched_setaffinity refuses a mask of no usable CPU.
    auto prepared = prepare_binding(WorkerBinding{IdSet({4000}), IdSet()});
    cpu_set_t before;
    REQUIRE(::sched_getaffinity(0, sizeof before, &before) == 0);
    errno = 1234;
    auto outcome = apply_binding(prepared);
    CHECK(errno == 1234);
    CHECK(outcome.failed == BindingStep::Affinity);
    CHECK(outcome.error == EINVAL);
    cpu_set_t after;
    REQUIRE(::sched_getaffinity(0, sizeof after, &after) == 0);
    CHECK(CPU_EQUAL(&before, &after));
}

TEST_CASE("binding masks cover the highest CPU and node", "[placement][apply]") {
    auto p = prepare_binding(WorkerBinding{IdSet({0, 64, 65}), IdSet({1, 3})});
    REQUIRE(p.cpu_mask.size() == 2);
    CHECK(p.cpu_mask[0] == 1UL);
    CHECK(p.cpu_mask[1] == 3UL);
    REQUIRE(p.node_mask.size() == 1);
    CHECK(p.node_mask[0] == 0b1010UL);
    CHECK(p.node_bits == 5);
    CHECK(p.many_nodes);
    CHECK(prepare_binding(WorkerBinding{IdSet({2}), IdSet()}).node_mask.empty());
}

TEST_CASE("process limits read Mems_allowed_list from a status text", "[placement][apply]") {
    CHECK(mems_allowed("Name:\tcat\nMems_allowed:\t1\nMems_allowed_list:\t0-1\n") == IdSet({0, 1}));
    CHECK_FALSE(mems_allowed("Name:\tcat\n"));
    auto limits = read_process_limits();
    REQUIRE(limits.mems);
    CHECK_FALSE(limits.mems->empty());
}
