// `train`: fits y = sin(2 pi x) with a small MLP, data parallel over ptrun's workers.
//   ptrun --standalone --nproc-per-node 4 train --epochs 30
// Without ptrun it runs as world size 1. After an elastic restart (TORCHELASTIC_RESTART_COUNT > 0)
// it resumes from the latest checkpoint. Exit codes: 0 done, 1 training failed, 2 bad usage.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "ptrun/ddp/init.hpp"
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
};

/// The checkpoint directory: --checkpoint-dir, else one per run under $TMPDIR when launched by
/// ptrun (the run id survives restarts), else none. Returns whether it is the per-run default.
bool choose_checkpoint_dir(Flags& f, const ptrun::env::EnvMap& env,
                           const ptrun::ddp::RunContext& ctx) {
    if (!f.train.checkpoint_dir.empty() || ctx.run_id == "none") return false;
    const auto tmp = ptrun::env::lookup(env, "TMPDIR").value_or("/tmp");
    f.train.checkpoint_dir = (std::filesystem::path(tmp) / ("ptrun-train-" + ctx.run_id)).string();
    return true;
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
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;  // --help: 0; a bad flag: 2, like ptrun
    }

    try {
        const auto env = ptrun::env::from_environ(environ);
        const auto ctx = ptrun::ddp::run_context_from_env(env);
        const bool temporary_dir = choose_checkpoint_dir(f, env, ctx);
        t.resume = ctx.restart_count > 0 && !t.checkpoint_dir.empty();
        if (f.crash_at_step > 0 && ctx.restart_count == 0 && ctx.rank == f.crash_rank) {
            t.after_step = [&f](std::uint64_t step) {
                if (step != f.crash_at_step) return;
                std::fprintf(stderr,
                             "train: rank %d killing itself after step %llu (--crash-at-step)\n",
                             f.crash_rank, static_cast<unsigned long long>(step));
                std::raise(SIGKILL);
            };
        }
        const ptrun::ddp::InitOptions options{.backend = ptrun::ddp::parse_backend(f.backend),
                                              .timeout = std::chrono::seconds(f.timeout_s),
                                              .device = -1};
        auto pg = ptrun::ddp::init_process_group(ctx, options);
        const auto result = ptrun::examples::train(*pg, t, std::cout);
        pg->barrier()->wait();  // every rank is done with the checkpoint directory
        if (pg->rank() == 0) {
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
