#include "ptrun/ddp/data_parallel.hpp"

#include <algorithm>
#include <barrier>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>

#include "fake_group.hpp"
#include "ptrun/ddp/errors.hpp"

using namespace ptrun::ddp;
using namespace ptrun::ddp::testing;

namespace {

/// Five parameters of 1000, 10, 500, 3000 and 7 floats (a small layered model).
struct Model {
    std::vector<std::vector<float>> params, grads;
    explicit Model(float init) {
        for (std::size_t n : {1000u, 10u, 500u, 3000u, 7u}) {
            params.emplace_back(n, init);
            grads.emplace_back(n, 0.0f);
        }
    }
    void register_with(DataParallel& dp) {
        for (std::size_t i = 0; i < params.size(); ++i) {
            dp.add_parameter("p" + std::to_string(i), params[i].data(), grads[i].data(),
                             params[i].size());
        }
    }
};

/// Gradient value rank r, step s, parameter i, element j has on that rank before averaging.
float grad_value(int r, int s, std::size_t i, std::size_t j) {
    return static_cast<float>(r + 1) * 0.5f + static_cast<float>(s) +
           static_cast<float>(i) * 0.25f + static_cast<float>(j % 7);
}

}  // namespace

TEST_CASE("data parallel buckets in reverse registration order within the size bound",
          "[ddp][data_parallel]") {
    FakeWorld world(1);
    FakeGroup pg(world, 0);
    Model m(0.0f);
    DataParallel dp(pg, {.bucket_bytes = 2048 * sizeof(float)});
    m.register_with(dp);
    const auto layout = dp.layout();
    // Reverse order 4 (7), 3 (3000: alone, over the bound), 2 (500), 1 (10), 0 (1000).
    REQUIRE(layout.buckets.size() == 3);
    CHECK(layout.buckets[0] == std::vector<std::size_t>{4});
    CHECK(layout.buckets[1] == std::vector<std::size_t>{3});
    CHECK(layout.buckets[2] == std::vector<std::size_t>{2, 1, 0});
    DataParallel one(pg);  // the 25 MiB default holds everything in one bucket
    m.register_with(one);
    CHECK(one.layout().buckets.size() == 1);
}

TEST_CASE("data parallel averages gradients across ranks in any marking order",
          "[ddp][data_parallel]") {
    for (int world_size : {1, 2, 3, 4}) {
        FakeWorld world(world_size);
        std::vector<float> max_error(static_cast<std::size_t>(world_size), 0.0f);
        run_ranks(world_size, [&](int r) {
            FakeGroup pg(world, r);
            Model m(0.0f);
            DataParallel dp(pg, {.bucket_bytes = 4096});
            m.register_with(dp);
            std::mt19937 gen(static_cast<unsigned>(r));
            for (int step = 0; step < 3; ++step) {
                for (std::size_t i = 0; i < m.grads.size(); ++i) {
                    for (std::size_t j = 0; j < m.grads[i].size(); ++j)
                        m.grads[i][j] = grad_value(r, step, i, j);
                }
                std::vector<std::size_t> order(m.grads.size());
                std::iota(order.begin(), order.end(), 0u);
                std::shuffle(order.begin(), order.end(), gen);  // a different order on every rank
                for (auto i : order) dp.mark_grad_ready(i);
                dp.finish();
                for (std::size_t i = 0; i < m.grads.size(); ++i) {
                    for (std::size_t j = 0; j < m.grads[i].size(); ++j) {
                        float expected = 0;
                        for (int q = 0; q < world_size; ++q) expected += grad_value(q, step, i, j);
                        expected /= static_cast<float>(world_size);
                        auto& e = max_error[static_cast<std::size_t>(r)];
                        e = std::max(e, std::abs(m.grads[i][j] - expected));
                    }
                }
            }
        });
        for (float e : max_error) CHECK(e < 1e-5f);
    }
}

TEST_CASE("data parallel launches a bucket before the last gradient is marked",
          "[ddp][data_parallel]") {
    // Overlap: once every rank has marked the first bucket's gradients, that allreduce has been
    // issued and completed while the rest of the backward pass (the last marks) is still to come.
    constexpr int kWorld = 3;
    FakeWorld world(kWorld);
    std::barrier sync(kWorld);
    std::vector<std::size_t> issued_mid(kWorld), issued_end(kWorld), completed_mid(kWorld);
    std::size_t completed_before = 0;
    run_ranks(kWorld, [&](int r) {
        FakeGroup pg(world, r);
        Model m(1.0f);
        DataParallel dp(pg, {.bucket_bytes = 2048 * sizeof(float)});
        m.register_with(dp);
        dp.broadcast_parameters();
        sync.arrive_and_wait();
        if (r == 0) completed_before = world.completed();
        sync.arrive_and_wait();
        dp.mark_grad_ready(4);   // bucket 0: {4}
        dp.mark_grad_ready(3);   // bucket 1: {3}
        sync.arrive_and_wait();  // every rank issued buckets 0 and 1
        const auto u = static_cast<std::size_t>(r);
        issued_mid[u] = dp.buckets_issued();
        completed_mid[u] = world.completed();
        sync.arrive_and_wait();
        dp.mark_grad_ready(2);
        dp.mark_grad_ready(1);
        dp.mark_grad_ready(0);
        issued_end[u] = dp.buckets_issued();
        dp.finish();
    });
    for (int r = 0; r < kWorld; ++r) {
        const auto u = static_cast<std::size_t>(r);
        CHECK(issued_mid[u] == 2);
        CHECK(completed_mid[u] == completed_before + 2);  // both allreduces already done
        CHECK(issued_end[u] == 3);
    }
}

TEST_CASE("data parallel holds a ready bucket until the buckets before it are issued",
          "[ddp][data_parallel]") {
    FakeWorld world(1);
    FakeGroup pg(world, 0);
    Model m(0.0f);
    DataParallel dp(pg, {.bucket_bytes = 2048 * sizeof(float)});
    m.register_with(dp);
    dp.layout();
    dp.mark_grad_ready(0);
    dp.mark_grad_ready(1);
    dp.mark_grad_ready(2);  // bucket 2 complete, but bucket 0 is not
    CHECK(dp.buckets_issued() == 0);
    CHECK(world.allreduces_issued(0) == 0);
    dp.mark_grad_ready(4);
    CHECK(dp.buckets_issued() == 1);
    dp.mark_grad_ready(3);
    CHECK(dp.buckets_issued() == 3);
    CHECK(world.allreduces_issued(0) == 3);
    dp.finish();
}

TEST_CASE("data parallel broadcasts rank 0's parameters", "[ddp][data_parallel]") {
    FakeWorld world(4);
    std::vector<float> seen(4);
    run_ranks(4, [&](int r) {
        FakeGroup pg(world, r);
        Model m(static_cast<float>(r) + 10.0f);
        DataParallel dp(pg);
        m.register_with(dp);
        dp.broadcast_parameters();
        float worst = 0;
        for (auto& p : m.params) {
            for (float v : p) worst = std::max(worst, std::abs(v - 10.0f));
        }
        seen[static_cast<std::size_t>(r)] = worst;
    });
    for (float w : seen) CHECK(w == 0.0f);
}

TEST_CASE("data parallel misuse is a clear error", "[ddp][data_parallel]") {
    FakeWorld world(1);
    FakeGroup pg(world, 0);
    Model m(0.0f);
    DataParallel dp(pg);
    m.register_with(dp);
    dp.mark_grad_ready(1);
    CHECK_THROWS_WITH(dp.mark_grad_ready(1), Catch::Contains("'p1' marked twice"));
    CHECK_THROWS_WITH(dp.mark_grad_ready(9), Catch::Contains("only 5 parameters"));
    CHECK_THROWS_WITH(dp.finish(), Catch::Contains("'p0', 'p2', 'p3', 'p4'"));
    float x = 0, g = 0;
    CHECK_THROWS_AS(dp.add_parameter("late", &x, &g, 1), std::logic_error);
    for (std::size_t i = 0; i < 5; ++i) dp.mark_grad_ready(i);  // the failed step was reset
    dp.finish();
}

TEST_CASE("data parallel refuses ranks that registered different sizes", "[ddp][data_parallel]") {
    FakeWorld world(2);
    std::vector<std::string> errors(2);
    run_ranks(2, [&](int r) {
        FakeGroup pg(world, r);
        std::vector<float> p(r == 0 ? 4 : 5), g(p.size());
        DataParallel dp(pg);
        dp.add_parameter("w", p.data(), g.data(), p.size());
        try {
            dp.broadcast_parameters();
        } catch (const CollectiveError& e) {
            errors[static_cast<std::size_t>(r)] = e.what();
        }
    });
    CHECK_THAT(errors[0], Catch::Contains("rank 1 registered 1 parameters (5 floats)"));
    CHECK_THAT(errors[1], Catch::Contains("rank 0 registered 1 parameters (4 floats)"));
}
