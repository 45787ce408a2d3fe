// Recovery in place, the worker's side: join / await_next / superseded against a real store
// server with workers as threads (the test plays ptrun's part in the keys), and a group that lost
// a rank re-formed with its replacement.
#include "ptrun/ddp/recovery.hpp"

#include <catch2/catch.hpp>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "ptrun/ddp/errors.hpp"
#include "ptrun/ddp/resync.hpp"
#include "ptrun/env/generation_keys.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

using namespace ptrun::ddp;
namespace keys = ptrun::env::generation_keys;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kLong{30'000};

struct Job {
    ptrun::rdzv::TcpStoreServer server{{.host = "127.0.0.1", .port = 0}};
    ptrun::rdzv::TcpStoreClient ptrun{{.host = "127.0.0.1", .port = server.port()}};

    RunContext context(int rank, int world) const {
        RunContext ctx;
        ctx.rank = rank;
        ctx.world_size = world;
        ctx.local_rank = rank;
        ctx.local_world_size = world;
        ctx.master_addr = "127.0.0.1";
        ctx.master_port = server.port();
        ctx.run_id = "recovery";
        ctx.recovery = true;
        return ctx;
    }

    /// What ptrun does when generation `g` begins, replacing `ranks`.
    void begin(std::int64_t g, const std::string& ranks) {
        ptrun.set(keys::kLatest, std::to_string(g));
        ptrun.compare_set(keys::ready(g - 1), "", keys::kSuperseded);
        ptrun.set(keys::begun(g), ranks);
    }
};

/// Runs body(rank) on `n` threads; the exception each ended with, in rank order.
template <class Body>
std::vector<std::exception_ptr> run_threads(int n, Body body) {
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
            try {
                body(r);
            } catch (...) {
                errors[static_cast<std::size_t>(r)] = std::current_exception();
            }
        });
    }
    for (auto& t : threads) t.join();
    return errors;
}

void rethrow_any(const std::vector<std::exception_ptr>& errors) {
    for (const auto& e : errors) {
        if (e) std::rethrow_exception(e);
    }
}

}  // namespace

TEST_CASE("the last worker to join a generation marks it ready for all", "[ddp][recovery]") {
    Job job;
    job.begin(1, "2");
    std::vector<std::int64_t> joined(3, -1);
    rethrow_any(run_threads(3, [&](int r) {
        Recovery recovery(job.context(r, 3), kLong);
        joined[static_cast<std::size_t>(r)] = recovery.join(1);
    }));
    CHECK(joined == std::vector<std::int64_t>{1, 1, 1});
    CHECK(job.ptrun.get(keys::ready(1), kLong) == "joined");
    CHECK(job.ptrun.add(keys::joined(1), 0) == 3);
}

TEST_CASE("a worker in a superseded generation joins the newer one", "[ddp][recovery]") {
    Job job;
    job.begin(1, "1");
    std::int64_t first = -1;
    std::thread early([&] { first = Recovery(job.context(0, 2), kLong).join(1); });
    job.ptrun.wait({keys::joined(1)}, kLong);  // rank 0 counted itself into generation 1
    job.begin(2, "0");                         // rank 1 died again before generation 1 was ready
    const std::int64_t second = Recovery(job.context(1, 2), kLong).join(2);
    early.join();
    CHECK(first == 2);
    CHECK(second == 2);
    CHECK(job.ptrun.get(keys::ready(1), kLong) == "superseded");
    CHECK(job.ptrun.get(keys::ready(2), kLong) == "joined");
}

TEST_CASE("await_next blocks until the next generation begins and returns the latest",
          "[ddp][recovery]") {
    Job job;
    std::int64_t next = -1;
    std::string replaced;
    std::thread survivor([&] {
        Recovery recovery(job.context(0, 2), kLong);
        next = recovery.await_next(0);
        replaced = recovery.replaced_ranks(0, next);
    });
    job.begin(1, "1");
    job.begin(2, "3");
    survivor.join();
    CHECK(next >= 1);  // 2 when it woke after both began
    CHECK(replaced == (next == 1 ? "1" : "1,3"));
}

TEST_CASE("recovery timeouts name the key and the count", "[ddp][recovery]") {
    Job job;
    Recovery recovery(job.context(0, 2), milliseconds(200));
    std::string join_error, wait_error;
    try {
        recovery.join(1);
    } catch (const CollectiveTimeout& e) {
        join_error = e.what();
    }
    CHECK_THAT(join_error,
               Catch::Contains("'/ptrun/gen/1/ready'") && Catch::Contains("1 of 2 workers joined"));
    try {
        recovery.await_next(4);
    } catch (const CollectiveTimeout& e) {
        wait_error = e.what();
    }
    CHECK_THAT(wait_error, Catch::Contains("'/ptrun/gen/5/begun'"));
    job.ptrun.set(keys::ready(7), "maybe");
    CHECK_THROWS_WITH(recovery.join(7), Catch::Contains("holds 'maybe'"));
}

TEST_CASE("a group that lost a rank re-forms with its replacement and resyncs", "[ddp][recovery]") {
    Job job;
    const InitOptions fast{.backend = Backend::Cpu, .timeout = milliseconds(500)};
    const InitOptions slow{.backend = Backend::Cpu, .timeout = kLong};
    std::string failure;
    std::vector<JoinedGroup> groups(2);
    std::vector<float> sums(2);
    std::vector<Resynced> agreed(2);
    std::vector<std::vector<float>> state{{4, 5}, {0, 0}};
    rethrow_any(run_threads(2, [&](int r) {
        RunContext ctx = job.context(r, 2);
        auto pg = init_process_group(ctx, fast);
        auto& mine = groups[static_cast<std::size_t>(r)];
        if (r == 0) {  // the survivor: its allreduce fails, it re-forms
            float v = 1;
            try {
                pg->allreduce(&v, 1, DType::Float32, ReduceOp::Sum)->wait();
            } catch (const CollectiveError& e) {
                failure = e.what();
            }
            Recovery recovery(ctx, kLong);
            mine = reform_process_group(std::move(pg), recovery, ctx, slow);
        } else {  // "dies" without a collective; ptrun begins generation 1 with a replacement
            pg.reset();
            job.begin(1, "1");
            ctx.generation = 1;
            ctx.restart_count = 1;
            Recovery recovery(ctx, kLong);
            mine = join_process_group(recovery, ctx, slow);
        }
        float v = static_cast<float>(r + 1);
        mine.group->allreduce(&v, 1, DType::Float32, ReduceOp::Sum)->wait();
        sums[static_cast<std::size_t>(r)] = v;
        auto& buf = state[static_cast<std::size_t>(r)];
        agreed[static_cast<std::size_t>(r)] = resync_state(
            *mine.group, {.epoch = 1, .step = r == 0 ? 5 : -1}, {std::span<float>(buf)});
    }));
    CHECK_THAT(failure, Catch::Contains("allreduce timed out"));
    for (int r = 0; r < 2; ++r) {
        const auto i = static_cast<std::size_t>(r);
        CHECK(groups[i].generation == 1);
        CHECK(groups[i].replaced == "1");
        CHECK(sums[i] == 3.0f);
        CHECK(agreed[i].source == 0);
        CHECK(agreed[i].position.step == 5);
        CHECK(agreed[i].position.epoch == 1);
        CHECK(state[i] == std::vector<float>{4, 5});
    }
}

TEST_CASE("resync refuses when no rank holds state", "[ddp][recovery]") {
    Job job;
    const InitOptions slow{.backend = Backend::Cpu, .timeout = kLong};
    std::vector<std::string> errors(2);
    rethrow_any(run_threads(2, [&](int r) {
        auto pg = init_process_group(job.context(r, 2), slow);
        std::vector<float> buf(3);
        try {
            resync_state(*pg, {.epoch = 0, .step = -1}, {std::span<float>(buf)});
        } catch (const std::runtime_error& e) {
            errors[static_cast<std::size_t>(r)] = e.what();
        }
    }));
    for (const auto& e : errors)
        CHECK_THAT(e, Catch::Contains("no rank of 2 holds training state"));
}
