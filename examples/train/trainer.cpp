#include "trainer.hpp"

#include <cmath>
#include <cstdio>
#include <memory>
#include <numbers>
#include <ostream>
#include <span>
#include <stdexcept>

#include "adam.hpp"
#include "ptrun/ddp/checkpoint.hpp"
#include "ptrun/ddp/data_parallel.hpp"
#include "ptrun/ddp/metrics.hpp"
#include "ptrun/ddp/resync.hpp"
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

/// The model, its optimizer and how many steps are done: what a step changes, and what recovery
/// resynchronises.
struct Model {
    Mlp mlp;
    Adam adam;
    std::uint64_t step = 0;

    explicit Model(const TrainOptions& o)
        : mlp(o.hidden, o.seed), adam(mlp.params(), {.lr = o.lr}) {}

    /// Parameters, then first and second moments: the buffers a resync copies.
    std::vector<std::span<float>> buffers() {
        std::vector<std::span<float>> out;
        for (auto& p : mlp.params()) out.emplace_back(p.value);
        for (auto& m : adam.first_moments()) out.emplace_back(m);
        for (auto& v : adam.second_moments()) out.emplace_back(v);
        return out;
    }
};

std::size_t steps_per_epoch(const TrainOptions& o) { return o.dataset_size / o.global_batch; }

/// Rank 0's parameters everywhere (fresh or restored).
void broadcast_parameters(ddp::ProcessGroup& pg, Mlp& mlp) {
    std::vector<ddp::WorkPtr> works;
    for (auto& p : mlp.params())
        works.push_back(pg.broadcast(p.value.data(), p.value.size(), DType::Float32, 0));
    for (auto& w : works) w->wait();
}

void print_header(ddp::ProcessGroup& pg, const TrainOptions& o, std::uint64_t resumed,
                  std::ostream& log) {
    if (pg.rank() != 0) return;
    const std::size_t local_batch = o.global_batch / static_cast<std::size_t>(pg.size());
    log << "train: world size " << pg.size() << " (" << pg.backend_name() << "), global batch "
        << o.global_batch << " = " << local_batch << " per rank, " << steps_per_epoch(o)
        << " steps per epoch, " << o.epochs << " epochs";
    if (resumed > 0) log << ", resumed from the checkpoint at step " << resumed;
    log << std::endl;
}

/// Runs the epochs from model.step to the end over `pg`. A step is atomic: the parameters and
/// model.step change only after all of its collectives succeeded, so a failure leaves the model
/// at the last completed step.
void run_epochs(ddp::ProcessGroup& pg, const TrainOptions& o, Model& model,
                const ddp::CheckpointDir* ckpts, std::ostream& log) {
    const bool chief = pg.rank() == 0;
    ddp::DataParallel dp(pg, {.bucket_bytes = o.bucket_bytes});
    for (auto& p : model.mlp.params())
        dp.add_parameter(p.name, p.value.data(), p.grad.data(), p.value.size());
    const std::size_t local_batch = o.global_batch / static_cast<std::size_t>(pg.size());
    const std::size_t per_epoch = steps_per_epoch(o);
    ddp::DistributedSampler sampler({.dataset_size = o.dataset_size,
                                     .rank = pg.rank(),
                                     .world_size = pg.size(),
                                     .seed = o.seed,
                                     .shuffle = true,
                                     .drop_last = false});
    std::vector<float> xs(local_batch), ys(local_batch);
    for (std::size_t epoch = model.step / per_epoch; epoch < o.epochs; ++epoch) {
        sampler.set_epoch(epoch);
        const auto indices = sampler.indices();
        double loss_sum = 0;
        std::size_t steps_run = 0;
        for (std::size_t s = model.step % per_epoch; s < per_epoch; ++s) {
            for (std::size_t k = 0; k < local_batch; ++k) {
                xs[k] = input_of(indices[s * local_batch + k], o.dataset_size);
                ys[k] = target_of(xs[k]);
            }
            loss_sum +=
                model.mlp.loss_and_grad(xs, ys, [&](std::size_t i) { dp.mark_grad_ready(i); });
            dp.finish();
            model.adam.update(model.mlp.params(), ++model.step);
            ++steps_run;
            if (o.after_step) o.after_step(model.step);
            if (ckpts && o.checkpoint_every > 0 && model.step % o.checkpoint_every == 0) {
                ckpts->save(snapshot(model.mlp, model.adam, model.step, epoch));
            }
        }
        const auto avg =
            ddp::average_metrics(pg, {{"loss", loss_sum / static_cast<double>(steps_run)}});
        if (ckpts && o.checkpoint_every == 0) {
            ckpts->save(snapshot(model.mlp, model.adam, model.step, epoch + 1));
        }
        if (chief) {
            char line[128];
            std::snprintf(line, sizeof line, "epoch %zu/%zu loss %.6f", epoch + 1, o.epochs,
                          avg.at("loss"));
            log << line << (steps_run < per_epoch ? " (partial epoch after resume)" : "")
                << std::endl;
        }
    }
}

TrainResult finish(const TrainOptions& o, Model& model, std::uint64_t resumed_from) {
    double mse = 0;
    for (std::size_t i = 0; i < o.dataset_size; ++i) {
        const float x = input_of(i, o.dataset_size);
        const double err =
            static_cast<double>(model.mlp.predict(x)) - static_cast<double>(target_of(x));
        mse += err * err;
    }
    TrainResult result;
    result.final_mse = mse / static_cast<double>(o.dataset_size);
    result.steps = model.step;
    result.resumed_from = resumed_from;
    result.params = model.mlp.params();
    return result;
}

std::unique_ptr<ddp::CheckpointDir> checkpoints(const TrainOptions& o, int rank) {
    if (o.checkpoint_dir.empty()) return nullptr;
    return std::make_unique<ddp::CheckpointDir>(o.checkpoint_dir, rank);
}

/// Every rank adopts the furthest rank's model (a replacement holds none: step -1); the source
/// says so in one line.
void resync(ddp::ProcessGroup& pg, const TrainOptions& o, Model& model, bool holds_state,
            const ddp::JoinedGroup& joined, std::ostream& log) {
    const auto per_epoch = static_cast<std::int64_t>(steps_per_epoch(o));
    const ddp::TrainingPosition mine{
        .epoch = static_cast<std::int64_t>(model.step) / per_epoch,
        .step = holds_state ? static_cast<std::int64_t>(model.step) : -1};
    const ddp::Resynced agreed = ddp::resync_state(pg, mine, model.buffers());
    model.step = static_cast<std::uint64_t>(agreed.position.step);
    if (pg.rank() == agreed.source) {
        log << "train: generation " << joined.generation << " re-formed at step " << model.step
            << " (rank" << (joined.replaced.find(',') == std::string::npos ? " " : "s ")
            << joined.replaced << " replaced); state from rank " << agreed.source << std::endl;
    }
}

}  // namespace

TrainResult train(ddp::ProcessGroup& pg, const TrainOptions& o, std::ostream& log) {
    validate(o, pg.size());
    Model model(o);
    const auto ckpts = checkpoints(o, pg.rank());
    model.step = o.resume ? resume(pg, *ckpts, model.mlp, model.adam) : 0;
    const std::uint64_t resumed_from = model.step;
    broadcast_parameters(pg, model.mlp);
    print_header(pg, o, resumed_from, log);
    run_epochs(pg, o, model, ckpts.get(), log);
    return finish(o, model, resumed_from);
}

TrainResult train(ddp::JoinedGroup& group, const TrainOptions& o, std::ostream& log,
                  const TrainRecovery& recovery) {
    validate(o, group.group->size());
    Model model(o);
    const auto ckpts = checkpoints(o, group.group->rank());
    std::uint64_t resumed_from = 0;
    bool holds_state = !recovery.replacement;
    if (holds_state) {
        model.step = o.resume ? resume(*group.group, *ckpts, model.mlp, model.adam) : 0;
        resumed_from = model.step;
        broadcast_parameters(*group.group, model.mlp);
        print_header(*group.group, o, resumed_from, log);
    }
    bool reformed = recovery.replacement;
    for (;;) {
        try {
            if (reformed) {
                if (recovery.before_resync) recovery.before_resync(group.generation);
                resync(*group.group, o, model, holds_state, group, log);
            }
            holds_state = true;
            reformed = false;
            run_epochs(*group.group, o, model, ckpts.get(), log);
            break;
        } catch (const ddp::CollectiveError& e) {
            // The model is at its last completed step (run_epochs); a failed resync changed
            // nothing either, and a replacement still holds no state.
            group = recovery.reform(std::move(group.group), e);
            reformed = true;
        }
    }
    return finish(o, model, resumed_from);
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
