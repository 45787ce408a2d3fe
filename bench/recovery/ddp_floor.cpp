// bench/recovery's floor for train (issue 36): what any recovery of a ptrun::ddp job costs at
// least, in place or by a group restart. Recovery in place ends with every rank in a new group
// that includes a new process (the replacement), and the survivors build that group again; a
// group restart needs the same. This measures those alone: from fork() of N processes to the last
// of them having built a cpu process group (init_process_group over a TcpStoreServer already up
// in this process, a fresh run id per round) and done one 1-element allreduce. No exec, no
// launcher, no state transfer, no step.
//
//   build/bench/bench_ddp_floor [--ranks 4,8] [--rounds 11]
//
// Prints a markdown table (median, min, max ms per N). Every child exits by itself (_exit) and
// is reaped.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "ptrun/ddp/init.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace {

long long now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

/// In a forked child: joins the group `run_id` of `world` ranks, allreduces once, writes its
/// clock to `fd`; never returns.
[[noreturn]] void child(int port, const std::string& run_id, int rank, int world, int fd) {
    int code = 0;
    try {
        ptrun::ddp::RunContext ctx;
        ctx.rank = rank;
        ctx.local_rank = rank;
        ctx.world_size = world;
        ctx.local_world_size = world;
        ctx.master_addr = "127.0.0.1";
        ctx.master_port = port;
        ctx.run_id = run_id;
        ptrun::ddp::InitOptions options;
        options.backend = ptrun::ddp::Backend::Cpu;
        options.timeout = std::chrono::seconds(30);
        auto group = ptrun::ddp::init_process_group(ctx, options);
        float one = 1.0F;
        group->allreduce(&one, 1, ptrun::ddp::DType::Float32, ptrun::ddp::ReduceOp::Sum)->wait();
        const std::string line = std::to_string(now_ns()) + "\n";
        if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) code = 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_ddp_floor: rank %d: %s\n", rank, e.what());
        code = 1;
    }
    ::_exit(code);
}

/// ms from the first fork to the last rank's allreduce done.
double one_round(int port, const std::string& run_id, int world) {
    int p[2];
    if (::pipe(p) != 0) std::exit(1);
    const long long start = now_ns();
    std::vector<pid_t> pids;
    for (int rank = 0; rank < world; ++rank) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::close(p[0]);
            child(port, run_id, rank, world, p[1]);
        }
        pids.push_back(pid);
    }
    ::close(p[1]);
    std::string data;
    char buf[4096];
    for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;)
        data.append(buf, static_cast<std::size_t>(n));
    ::close(p[0]);
    bool ok = true;
    for (pid_t pid : pids) {
        int status = 0;
        ok = ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
             ok;
    }
    long long last = 0;
    int lines = 0;
    for (std::size_t at = 0, nl; (nl = data.find('\n', at)) != std::string::npos; at = nl + 1) {
        last = std::max(last, std::atoll(data.substr(at, nl - at).c_str()));
        ++lines;
    }
    if (!ok || lines != world) {
        std::fprintf(stderr, "bench_ddp_floor: a round of %d ranks failed\n", world);
        std::exit(1);
    }
    return static_cast<double>(last - start) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> ranks{4, 8};
    int rounds = 11;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--rounds") {
            rounds = std::atoi(argv[i + 1]);
        } else if (flag == "--ranks") {
            ranks.clear();
            std::string list = argv[i + 1];
            for (std::size_t at = 0; at <= list.size();) {
                const std::size_t comma = std::min(list.find(',', at), list.size());
                ranks.push_back(std::atoi(list.substr(at, comma - at).c_str()));
                at = comma + 1;
            }
        } else {
            std::fprintf(stderr, "usage: %s [--ranks 4,8] [--rounds 11]\n", argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || std::any_of(ranks.begin(), ranks.end(), [](int n) { return n < 2; })) {
        std::fprintf(stderr, "bench_ddp_floor: --rounds >= 1 and every --ranks >= 2 expected\n");
        return 2;
    }
    ptrun::rdzv::TcpStoreServer store({.host = "127.0.0.1"});
    std::printf("fork -> last rank's ptrun::ddp cpu group built + one allreduce done; %d rounds\n",
                rounds);
    std::printf("| ranks | median ms | min ms | max ms |\n|---:|---:|---:|---:|\n");
    int round = 0;
    for (int world : ranks) {
        one_round(store.port(), "warm" + std::to_string(world), world);
        std::vector<double> times;
        for (int i = 0; i < rounds; ++i)
            times.push_back(one_round(store.port(), "r" + std::to_string(round++), world));
        std::sort(times.begin(), times.end());
        std::printf("| %d | %.1f | %.1f | %.1f |\n", world, times[times.size() / 2], times.front(),
                    times.back());
    }
    return 0;
}
