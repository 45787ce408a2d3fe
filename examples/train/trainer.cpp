#include "trainer.hpp"

#include <cmath>
#include <cstdio>
#include <memory>
#include <numbers>
#include <ostream>
#include <stdexcept>

#include "adam.hpp"
#include "ptrun/ddp/checkpoint.hpp"
#include "ptrun/ddp/data_parallel.hpp"
#include "ptrun/ddp/metrics.hpp"
#include "ptrun/ddp/sampler.hpp"

namespace ptrun::examples {
namespace {

using ddp::Checkpoint;
using ddp::DType;

float input_of(std::size_t i, std::size_t n) {
    return (static_cast<float>(i) + 0.5f) / static_cast<float>(n);
}

float target_of(float x) { return std::sin(2.0f * std::numbers::pi_v<float> * x); }

void validate(const TrainOptions& o, int world) {
    const auto w = static_cast<std::size_t>(world);
    if (o.global_batch == 0 || o.global_batch % w != 0) {
        throw std::invalid_argument("--global-batch " + std::to_string(o.global_batch) +
                                    ": expected a positive multiple of the world size " +
                                    std::to_string(world));
    }
    if (o.global_batch > o.dataset_size) {
        throw std::invalid_argument("--global-batch " + std::to_string(o.global_batch) +
                                    ": larger than the dataset (" + std::to_string(o.dataset_size) +
                                    " samples)");
    }
    if (o.hidden == 0) throw std::invalid_argument("--hidden 0: expected at least 1");
    if (o.resume && o.checkpoint_dir.empty()) {
        throw std::invalid_argument("resuming needs a checkpoint directory");
    }
}

/// Parameters and Adam moments as checkpoint buffers ("w1", "w1.adam_m", "w1.adam_v", ...).
Checkpoint snapshot(Mlp& model, Adam& adam, std::uint64_t step, std::uint64_t epoch) {
    Checkpoint c{.step = step, .epoch = epoch, .buffers = {}};
    auto& params = model.params();
    for (std::size_t p = 0; p < params.size(); ++p) {
        c.buffers.emplace_back(params[p].name, params[p].value);
        c.buffers.emplace_back(params[p].name + ".adam_m", adam.first_moments()[p]);
        c.buffers.emplace_back(params[p].name + ".adam_v", adam.second_moments()[p]);
    }
    return c;
}

void restore_into(std::vector<float>& dst, const Checkpoint& c, const std::string& name) {
    const auto& src = c.buffer(name);
    if (src.size() != dst.size()) {
        throw ddp::CheckpointError("checkpoint buffer '" + name + "' has " +
                                   std::to_string(src.size()) + " values, the model needs " +
                                   std::to_string(dst.size()) + " (different --hidden?)");
    }
    dst = src;
}

/// Rank 0 reads the latest checkpoint and broadcasts its step and contents; returns the step
/// (0 when there is none). Every rank then holds the same parameters and moments.
std::uint64_t resume(ddp::ProcessGroup& pg, const ddp::CheckpointDir& dir, Mlp& model, Adam& adam) {
    std::int64_t step = 0;
    if (pg.rank() == 0) {
        if (auto c = dir.load_latest()) {
            auto& params = model.params();
            for (std::size_t p = 0; p < params.size(); ++p) {
                restore_into(params[p].value, *c, params[p].name);
                restore_into(adam.first_moments()[p], *c, params[p].name + ".adam_m");
                restore_into(adam.second_moments()[p], *c, params[p].name + ".adam_v");
            }
            step = static_cast<std::int64_t>(c->step);
        }
    }
    pg.broadcast(&step, 1, DType::Int64, 0)->wait();
    if (step > 0) {
        std::vector<ddp::WorkPtr> works;
        for (auto* moments : {&adam.first_moments(), &adam.second_moments()}) {
            for (auto& m : *moments)
                works.push_back(pg.broadcast(m.data(), m.size(), DType::Float32, 0));
        }
        for (auto& w : works) w->wait();
    }
    return static_cast<std::uint64_t>(step);
}

}  // namespace

TrainResult train(ddp::ProcessGroup& pg, const TrainOptions& o, std::ostream& log) {
    const int world = pg.size();
    validate(o, world);
    const bool chief = pg.rank() == 0;
    Mlp model(o.hidden, o.seed);
    Adam adam(model.params(), {.lr = o.lr});
    ddp::DataParallel dp(pg, {.bucket_bytes = o.bucket_bytes});
    for (auto& p : model.params())
        dp.add_parameter(p.name, p.value.data(), p.grad.data(), p.value.size());

    std::unique_ptr<ddp::CheckpointDir> ckpts;
    if (!o.checkpoint_dir.empty())
        ckpts = std::make_unique<ddp::CheckpointDir>(o.checkpoint_dir, pg.rank());
    TrainResult result;
    std::uint64_t step = o.resume ? resume(pg, *ckpts, model, adam) : 0;
    result.resumed_from = step;
    dp.broadcast_parameters();  // rank 0's parameters (fresh or restored) everywhere

    const std::size_t local_batch = o.global_batch / static_cast<std::size_t>(world);
    const std::size_t steps_per_epoch = o.dataset_size / o.global_batch;
    ddp::DistributedSampler sampler({.dataset_size = o.dataset_size,
                                     .rank = pg.rank(),
                                     .world_size = world,
                                     .seed = o.seed,
                                     .shuffle = true,
                                     .drop_last = false});
    if (chief) {
        log << "train: world size " << world << " (" << pg.backend_name() << "), global batch "
            << o.global_batch << " = " << local_batch << " per rank, " << steps_per_epoch
            << " steps per epoch, " << o.epochs << " epochs";
        if (step > 0) log << ", resumed from the checkpoint at step " << step;
        log << std::endl;
    }
    std::vector<float> xs(local_batch), ys(local_batch);
    for (std::size_t epoch = step / steps_per_epoch; epoch < o.epochs; ++epoch) {
        sampler.set_epoch(epoch);
        const auto indices = sampler.indices();
        double loss_sum = 0;
        std::size_t steps_run = 0;
        for (std::size_t s = step % steps_per_epoch; s < steps_per_epoch; ++s) {
            for (std::size_t k = 0; k < local_batch; ++k) {
                xs[k] = input_of(indices[s * local_batch + k], o.dataset_size);
                ys[k] = target_of(xs[k]);
            }
            loss_sum += model.loss_and_grad(xs, ys, [&](std::size_t i) { dp.mark_grad_ready(i); });
            dp.finish();
            adam.update(model.params(), ++step);
            ++steps_run;
            if (o.after_step) o.after_step(step);
            if (ckpts && o.checkpoint_every > 0 && step % o.checkpoint_every == 0) {
                ckpts->save(snapshot(model, adam, step, epoch));
            }
        }
        const auto avg =
            ddp::average_metrics(pg, {{"loss", loss_sum / static_cast<double>(steps_run)}});
        if (ckpts && o.checkpoint_every == 0) ckpts->save(snapshot(model, adam, step, epoch + 1));
        if (chief) {
            char line[128];
            std::snprintf(line, sizeof line, "epoch %zu/%zu loss %.6f", epoch + 1, o.epochs,
                          avg.at("loss"));
            log << line << (steps_run < steps_per_epoch ? " (partial epoch after resume)" : "")
                << std::endl;
        }
    }
    double mse = 0;
    for (std::size_t i = 0; i < o.dataset_size; ++i) {
        const float x = input_of(i, o.dataset_size);
        const double err =
            static_cast<double>(model.predict(x)) - static_cast<double>(target_of(x));
        mse += err * err;
    }
    result.final_mse = mse / static_cast<double>(o.dataset_size);
    result.steps = step;
    result.params = model.params();
    return result;
}

void write_params_text(const std::string& path, const std::vector<Tensor>& params) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) throw std::runtime_error("cannot write " + path);
    for (const auto& p : params) {
        std::fprintf(f, "%s", p.name.c_str());
        for (float v : p.value) std::fprintf(f, " %.9g", static_cast<double>(v));
        std::fprintf(f, "\n");
    }
    if (std::fclose(f) != 0) throw std::runtime_error("cannot write " + path);
}

}  // namespace ptrun::examples
