#include "ptrun/ddp/sampler.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

using namespace ptrun::ddp;

namespace {

std::vector<std::vector<std::size_t>> all_ranks(SamplerOptions o, std::uint64_t epoch = 0) {
    std::vector<std::vector<std::size_t>> out;
    for (int r = 0; r < o.world_size; ++r) {
        o.rank = r;
        DistributedSampler s(o);
        s.set_epoch(epoch);
        out.push_back(s.indices());
    }
    return out;
}

}  // namespace

TEST_CASE("sampler without shuffle strides like torch", "[ddp][sampler]") {
    auto ranks = all_ranks({.dataset_size = 10, .world_size = 3, .shuffle = false});
    // torch: [0..9] padded with [0, 1] -> rank r takes r, r+3, ...
    CHECK(ranks[0] == std::vector<std::size_t>{0, 3, 6, 9});
    CHECK(ranks[1] == std::vector<std::size_t>{1, 4, 7, 0});
    CHECK(ranks[2] == std::vector<std::size_t>{2, 5, 8, 1});
}

TEST_CASE("sampler with drop_last drops the uneven tail", "[ddp][sampler]") {
    auto ranks =
        all_ranks({.dataset_size = 10, .world_size = 3, .shuffle = false, .drop_last = true});
    CHECK(ranks[0] == std::vector<std::size_t>{0, 3, 6});
    CHECK(ranks[1] == std::vector<std::size_t>{1, 4, 7});
    CHECK(ranks[2] == std::vector<std::size_t>{2, 5, 8});
}

TEST_CASE("sampler pads by repeating the list when the world exceeds the dataset",
          "[ddp][sampler]") {
    SamplerOptions o{.dataset_size = 2, .world_size = 5, .shuffle = false};
    DistributedSampler s(o);
    CHECK(s.num_samples() == 1);
    CHECK(s.epoch_order() == std::vector<std::size_t>{0, 1, 0, 1, 0});
}

TEST_CASE("sampler shards cover the dataset exactly once when it divides", "[ddp][sampler]") {
    for (int world : {1, 2, 3, 4}) {
        auto ranks = all_ranks({.dataset_size = 120, .world_size = world, .seed = 7}, 3);
        std::multiset<std::size_t> seen;
        for (auto& r : ranks) {
            CHECK(r.size() == 120 / static_cast<std::size_t>(world));
            seen.insert(r.begin(), r.end());
        }
        CHECK(seen.size() == 120);
        CHECK(std::set<std::size_t>(seen.begin(), seen.end()).size() == 120);
    }
}

TEST_CASE("sampler shuffle depends on seed and epoch only", "[ddp][sampler]") {
    SamplerOptions o{.dataset_size = 100, .world_size = 2, .seed = 42};
    DistributedSampler a(o), b(o);
    a.set_epoch(1);
    b.set_epoch(1);
    CHECK(a.indices() == b.indices());
    b.set_epoch(2);
    CHECK(a.indices() != b.indices());
    o.seed = 43;
    DistributedSampler c(o);
    c.set_epoch(1);
    CHECK(a.indices() != c.indices());
}

TEST_CASE("sampler's first rounds are the same samples at every world size", "[ddp][sampler]") {
    // A fixed global batch of 12: step k takes permutation positions [12k, 12k+12) at any world
    // size.
    const auto order = DistributedSampler({.dataset_size = 100, .seed = 5}).epoch_order();
    for (int world : {2, 3, 4}) {
        auto ranks = all_ranks({.dataset_size = 100, .world_size = world, .seed = 5});
        const auto local = 12 / static_cast<std::size_t>(world);
        for (std::size_t step = 0; step < 100 / 12; ++step) {
            std::multiset<std::size_t> global,
                expected(order.begin() + static_cast<long>(step * 12),
                         order.begin() + static_cast<long>(step * 12 + 12));
            for (auto& r : ranks)
                global.insert(r.begin() + static_cast<long>(step * local),
                              r.begin() + static_cast<long>(step * local + local));
            CHECK(global == expected);
        }
    }
}

TEST_CASE("seeded_permutation is a fixed permutation", "[ddp][sampler]") {
    auto p = seeded_permutation(1000, 1);
    auto sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) REQUIRE(sorted[i] == i);
    CHECK(p == seeded_permutation(1000, 1));
    CHECK(seeded_permutation(0, 1).empty());
}

TEST_CASE("sampler rejects a bad rank or world size", "[ddp][sampler]") {
    CHECK_THROWS_AS(DistributedSampler({.dataset_size = 4, .rank = 2, .world_size = 2}),
                    std::invalid_argument);
    CHECK_THROWS_AS(DistributedSampler({.dataset_size = 4, .world_size = 0}),
                    std::invalid_argument);
}
