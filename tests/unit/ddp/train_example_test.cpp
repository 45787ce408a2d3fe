// The `train` example's loop in-process over the threaded fake group: data parallelism with a
// fixed global batch gives the single-process result, and a resumed run ends where an
// uninterrupted one does.
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "fake_group.hpp"
#include "trainer.hpp"

using namespace ptrun::ddp::testing;
using ptrun::examples::Tensor;
using ptrun::examples::TrainOptions;
using ptrun::examples::TrainResult;

namespace {

TrainOptions small() {
    TrainOptions o;
    o.epochs = 4;
    o.global_batch = 24;
    o.dataset_size = 240;
    o.hidden = 8;
    o.bucket_bytes = 256;  // several buckets
    return o;
}

std::vector<TrainResult> run_world(int size, const TrainOptions& o) {
    FakeWorld world(size);
    std::vector<TrainResult> out(static_cast<std::size_t>(size));
    run_ranks(size, [&](int r) {
        FakeGroup pg(world, r);
        std::ostringstream log;
        out[static_cast<std::size_t>(r)] = ptrun::examples::train(pg, o, log);
    });
    return out;
}

float max_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    float worst = 0;
    for (std::size_t p = 0; p < a.size(); ++p) {
        for (std::size_t k = 0; k < a[p].value.size(); ++k) {
            worst = std::max(worst, std::abs(a[p].value[k] - b[p].value[k]));
        }
    }
    return worst;
}

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string tmpl =
            (std::filesystem::temp_directory_path() / "ptrun-train-test-XXXXXX").string();
        path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("train at world sizes 2, 3, 4 matches the single-process run", "[ddp][train]") {
    const auto single = run_world(1, small()).front();
    CHECK(single.steps == 40);
    for (int size : {2, 3, 4}) {
        const auto ranks = run_world(size, small());
        for (const auto& r : ranks) {
            CHECK(max_diff(r.params, ranks.front().params) == 0.0f);  // replicas stay identical
            CHECK(max_diff(r.params, single.params) < 1e-4f);
        }
    }
}

TEST_CASE("train resumed from a checkpoint ends where an uninterrupted run ends", "[ddp][train]") {
    TempDir dir;
    auto o = small();
    o.checkpoint_dir = dir.path.string();
    const auto full = run_world(2, o).front();
    std::filesystem::remove_all(dir.path / "");
    // First attempt stops after step 15 (mid-epoch 2); the epoch-1 checkpoint (step 10) survives.
    auto first = o;
    first.after_step = [](std::uint64_t step) {
        if (step == 15) throw std::runtime_error("simulated crash");
    };
    CHECK_THROWS_WITH(run_world(2, first), "simulated crash");
    auto again = o;
    again.resume = true;
    const auto resumed = run_world(2, again).front();
    CHECK(resumed.resumed_from == 10);
    CHECK(resumed.steps == 40);
    CHECK(max_diff(resumed.params, full.params) == 0.0f);
}

TEST_CASE("train refuses a global batch the world does not divide", "[ddp][train]") {
    auto o = small();
    o.global_batch = 25;
    CHECK_THROWS_WITH(run_world(2, o), Catch::Contains("multiple of the world size 2"));
}

TEST_CASE("mlp backward matches finite differences of its loss", "[ddp][train]") {
    ptrun::examples::Mlp model(5, 11);
    const std::vector<float> x{0.1f, 0.4f, 0.75f}, y{0.5f, -0.2f, 0.9f};
    std::vector<std::size_t> order;
    model.loss_and_grad(x, y, [&](std::size_t i) { order.push_back(i); });
    // Output layer first, input layer last: what lets DataParallel overlap.
    CHECK(order == std::vector<std::size_t>{5, 4, 3, 2, 1, 0});
    auto analytic = model.params();
    for (std::size_t p = 0; p < analytic.size(); ++p) {
        for (std::size_t k = 0; k < analytic[p].value.size(); ++k) {
            auto& v = model.params()[p].value[k];
            const float saved = v, h = 1e-2f;
            v = saved + h;
            const double up = model.loss_and_grad(x, y, [](std::size_t) {});
            v = saved - h;
            const double down = model.loss_and_grad(x, y, [](std::size_t) {});
            v = saved;
            INFO(analytic[p].name << "[" << k << "]");
            CHECK(analytic[p].grad[k] == Approx((up - down) / (2 * h)).margin(2e-3));
        }
    }
}
