// `train`: fits y = sin(2 pi x) with a small MLP, data parallel over ptrun's workers.
//   ptrun --standalone --nproc-per-node 4 train --epochs 30
// Without ptrun it runs as world size 1. After an elastic restart (TORCHELASTIC_RESTART_COUNT > 0)
// it resumes from the latest checkpoint; under ptrun --restart-policy failed a lost peer is
// replaced in place and the state comes from the survivors instead. Exit codes: 0 done, 1 training
// failed, 2 bad usage.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "ptrun/ddp/init.hpp"
#include "ptrun/ddp/recovery.hpp"
#include "trainer.hpp"

extern char** environ;

namespace {

struct Flags {
    ptrun::examples::TrainOptions train;
    std::string final_params;
    std::string backend = "cpu";
    long long timeout_s = 300;
    std::uint64_t crash_at_step = 0;
    int crash_rank = 0;
    int crash_in_resync_rank = -1;
    bool step_times = false;
};

/// CLOCK_MONOTONIC in nanoseconds: the clock of --step-times and of the --crash-at-step line, so
/// a bench can subtract one worker's time from another's on the same machine.
long long monotonic_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

/// The hook train() calls after each step: --step-times' line, then --crash-at-step's kill (only
/// the rank's first worker: restart 0, which is generation 0 too). Empty when neither applies, so
/// the flags cost nothing when off.
std::function<void(std::uint64_t)> after_step_hook(const Flags& f,
                                                   const ptrun::ddp::RunContext& ctx) {
    const bool crash = f.crash_at_step > 0 && ctx.restart_count == 0 && ctx.rank == f.crash_rank;
    if (!crash && !f.step_times) return {};
    return [crash, step_times = f.step_times, at = f.crash_at_step,
            rank = ctx.rank](std::uint64_t step) {
        if (step_times) {
            std::fprintf(stderr, "train: rank %d step %llu done at %lld ns\n", rank,
                         static_cast<unsigned long long>(step), monotonic_ns());
        }
        if (!crash || step != at) return;
        std::fprintf(stderr,
                     "train: rank %d killing itself after step %llu (--crash-at-step) at %lld ns\n",
                     rank, static_cast<unsigned long long>(step), monotonic_ns());
        std::raise(SIGKILL);
    };
}

/// The checkpoint directory: --checkpoint-dir, else one per run under $TMPDIR when launched by
/// ptrun (the run id survives restarts), else none. Returns whether it is the per-run default.
bool choose_checkpoint_dir(Flags& f, const ptrun::env::EnvMap& env,
                           const ptrun::ddp::RunContext& ctx) {
    // Under recovery in place the state comes from the peers: no checkpoint unless asked for.
    if (!f.train.checkpoint_dir.empty() || ctx.run_id == "none" || ctx.recovery) return false;
    const auto tmp = ptrun::env::lookup(env, "TMPDIR").value_or("/tmp");
    f.train.checkpoint_dir = (std::filesystem::path(tmp) / ("ptrun-train-" + ctx.run_id)).string();
    return true;
}

/// The group training ended on and what it produced.
struct Trained {
    std::unique_ptr<ptrun::ddp::ProcessGroup> group;
    ptrun::examples::TrainResult result;
};

Trained train_plain(const ptrun::ddp::RunContext& ctx, const ptrun::ddp::InitOptions& options,
                    const ptrun::examples::TrainOptions& t) {
    Trained out;
    out.group = ptrun::ddp::init_process_group(ctx, options);
    out.result = ptrun::examples::train(*out.group, t, std::cout);
    return out;
}

/// Under ptrun --restart-policy failed: a replacement joins its generation first; a lost peer
/// re-forms the group (ptrun::ddp::Recovery) instead of ending the worker.
Trained train_recovering(ptrun::ddp::RunContext ctx, const ptrun::ddp::InitOptions& options,
                         const ptrun::examples::TrainOptions& t, long long timeout_s,
                         int f_crash_in_resync) {
    std::fprintf(stderr, "train: rank %d (pid %d) starts in generation %lld\n", ctx.rank,
                 static_cast<int>(::getpid()), static_cast<long long>(ctx.generation));
    ptrun::ddp::Recovery recovery(ctx, std::chrono::seconds(timeout_s));
    const bool replacement = ctx.generation > 0;
    ptrun::ddp::JoinedGroup group;
    if (replacement) {
        group = ptrun::ddp::join_process_group(recovery, ctx, options);
    } else {
        group.group = ptrun::ddp::init_process_group(ctx, options);
    }
    ptrun::examples::TrainRecovery how;
    how.replacement = replacement;
    if (f_crash_in_resync == ctx.rank && !replacement) {
        // Testing: this survivor dies as generation 1's state transfer begins (a fault during
        // recovery: the others re-form once more).
        how.before_resync = [rank = ctx.rank](std::int64_t generation) {
            if (generation != 1) return;
            std::fprintf(stderr, "train: rank %d killing itself in generation 1's resync\n", rank);
            std::raise(SIGKILL);
        };
    }
    how.reform = [&](std::unique_ptr<ptrun::ddp::ProcessGroup> broken,
                     const ptrun::ddp::CollectiveError& why) {
        std::fprintf(stderr, "train: rank %d lost its group in generation %lld: %s; re-forming\n",
                     ctx.rank, static_cast<long long>(ctx.generation), why.what());
        return ptrun::ddp::reform_process_group(std::move(broken), recovery, ctx, options);
    };
    Trained out;
    out.result = ptrun::examples::train(group, t, std::cout, how);
    out.group = std::move(group.group);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Fits y = sin(2 pi x) with a small MLP, data parallel across ptrun's workers."};
    Flags f;
    auto& t = f.train;
    app.add_option("--epochs", t.epochs, "Passes over the data")->capture_default_str();
    app.add_option("--global-batch", t.global_batch,
                   "Samples per step over all ranks (a multiple of the world size)")
        ->capture_default_str();
    app.add_option("--dataset-size", t.dataset_size, "Points x in (0, 1)")->capture_default_str();
    app.add_option("--hidden", t.hidden, "Width of the two hidden layers")->capture_default_str();
    app.add_option("--lr", t.lr, "Adam learning rate")->capture_default_str();
    app.add_option("--seed", t.seed, "Initial parameters and shuffle")->capture_default_str();
    app.add_option(
        "--checkpoint-dir", t.checkpoint_dir,
        "Where rank 0 writes checkpoints (default under ptrun: $TMPDIR/ptrun-train-<run id>, "
        "removed after success)");
    app.add_option("--checkpoint-every", t.checkpoint_every,
                   "Steps between checkpoints (0: every epoch)")
        ->capture_default_str();
    app.add_option("--bucket-bytes", t.bucket_bytes, "Gradient bucket size in bytes")
        ->capture_default_str();
    app.add_option("--final-params", f.final_params,
                   "Rank 0 writes the final parameters here (text)");
    app.add_option("--backend", f.backend, "Process group backend: cpu, nccl or auto")
        ->capture_default_str();
    app.add_option("--timeout", f.timeout_s, "Seconds any collective may take")
        ->capture_default_str();
    app.add_option("--crash-at-step", f.crash_at_step,
                   "Testing: kill this worker (SIGKILL) after this step, attempt 0 only");
    app.add_option("--crash-rank", f.crash_rank, "Testing: the rank --crash-at-step kills")
        ->capture_default_str();
    app.add_option("--crash-in-resync-rank", f.crash_in_resync_rank,
                   "Testing (--restart-policy failed): this surviving rank dies as generation 1's "
                   "state transfer begins")
        ->capture_default_str();
    app.add_flag("--step-times", f.step_times,
                 "Testing: print when the worker started and each step ended, in CLOCK_MONOTONIC "
                 "ns, to stderr");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;  // --help: 0; a bad flag: 2, like ptrun
    }

    try {
        const auto env = ptrun::env::from_environ(environ);
        const auto ctx = ptrun::ddp::run_context_from_env(env);
        if (f.step_times) {
            std::fprintf(stderr, "train: rank %d (pid %d) started at %lld ns\n", ctx.rank,
                         static_cast<int>(::getpid()), monotonic_ns());
        }
        const bool temporary_dir = choose_checkpoint_dir(f, env, ctx);
        // A replacement (generation > 0) takes its state from the peers, never from a file.
        t.resume = ctx.restart_count > 0 && ctx.generation == 0 && !t.checkpoint_dir.empty();
        t.after_step = after_step_hook(f, ctx);
        const ptrun::ddp::InitOptions options{.backend = ptrun::ddp::parse_backend(f.backend),
                                              .timeout = std::chrono::seconds(f.timeout_s),
                                              .device = -1};
        auto trained = ctx.recovery
                           ? train_recovering(ctx, options, t, f.timeout_s, f.crash_in_resync_rank)
                           : train_plain(ctx, options, t);
        trained.group->barrier()->wait();  // every rank is done with the checkpoint directory
        const auto& result = trained.result;
        if (trained.group->rank() == 0) {
            std::printf("final mse %.6f after %llu steps\n", result.final_mse,
                        static_cast<unsigned long long>(result.steps));
            if (!f.final_params.empty())
                ptrun::examples::write_params_text(f.final_params, result.params);
            if (temporary_dir) std::filesystem::remove_all(t.checkpoint_dir);
        }
        return 0;
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "train: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "train: %s\n", e.what());
        return 1;
    }
}
