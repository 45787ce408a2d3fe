#include "ptrun/ddp/metrics.hpp"

#include <catch2/catch.hpp>

#include "fake_group.hpp"

using namespace ptrun::ddp;
using namespace ptrun::ddp::testing;

TEST_CASE("metrics are averaged across ranks", "[ddp][metrics]") {
    for (int size : {1, 2, 3, 4}) {
        FakeWorld world(size);
        std::vector<Metrics> out(static_cast<std::size_t>(size));
        run_ranks(size, [&](int r) {
            FakeGroup pg(world, r);
            out[static_cast<std::size_t>(r)] =
                average_metrics(pg, {{"loss", r * 2.0}, {"acc", 1.0}, {"zeta", -r * 1.0}});
        });
        const double mean_r = (size - 1) / 2.0;
        for (auto& m : out) {
            CHECK(m.at("loss") == Approx(2 * mean_r));
            CHECK(m.at("acc") == Approx(1.0));
            CHECK(m.at("zeta") == Approx(-mean_r));
        }
    }
}

TEST_CASE("metrics with different names on some rank fail on every rank", "[ddp][metrics]") {
    FakeWorld world(3);
    std::vector<std::string> errors(3);
    run_ranks(3, [&](int r) {
        FakeGroup pg(world, r);
        Metrics mine{{"loss", 1.0}};
        if (r == 2) mine["accuracy"] = 0.5;
        try {
            average_metrics(pg, mine);
        } catch (const MetricsMismatch& e) {
            errors[static_cast<std::size_t>(r)] = e.what();
        }
    });
    CHECK_THAT(errors[0],
               Catch::Contains("rank 2 has 2 metric names") && Catch::Contains("{loss}"));
    CHECK_THAT(errors[2],
               Catch::Contains("rank 0 has 1 metric names") && Catch::Contains("{accuracy, loss}"));
    CHECK_FALSE(errors[1].empty());
}

TEST_CASE("metrics with no names is an empty map", "[ddp][metrics]") {
    FakeWorld world(2);
    run_ranks(2, [&](int r) {
        FakeGroup pg(world, r);
        if (!average_metrics(pg, {}).empty()) throw std::runtime_error("expected empty");
    });
}
