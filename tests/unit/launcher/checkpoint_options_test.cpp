// --checkpoint-signal, --checkpoint-grace, --requeue: resolved into LaunchConfig, and the SLURM
// task that requeues the job.
#include <catch2/catch.hpp>
#include <csignal>

#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/slurm_defaults.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"
#include "ptrun/launcher/process/slurm_requeue.hpp"

using namespace ptrun::launcher;

namespace {

LaunchConfig config_for(std::vector<std::string> args, const ptrun::env::EnvMap& env = {}) {
    args.push_back("train");
    auto options = std::get<LaunchOptions>(parse_command_line(args, env));
    return resolve(apply_slurm_defaults(std::move(options), env).options, HostFacts{});
}

}  // namespace

TEST_CASE("resolve: no checkpoint signal by default, a 60 s grace", "[launcher][checkpoint]") {
    auto c = config_for({});
    CHECK(c.checkpoint_signal == 0);
    CHECK(c.checkpoint_grace == std::chrono::seconds(60));
    CHECK_FALSE(c.requeue);
}

TEST_CASE("resolve: --checkpoint-signal takes a name or number and is always handled",
          "[launcher][checkpoint]") {
    auto c = config_for({"--checkpoint-signal", "USR1", "--checkpoint-grace", "2.5",
                         "--signals-to-handle", "SIGINT"});
    CHECK(c.checkpoint_signal == SIGUSR1);
    CHECK(c.checkpoint_grace.count() == 2500);
    CHECK(c.signals_to_handle == std::vector<int>{SIGINT, SIGUSR1, SIGTERM});
    CHECK(config_for({"--checkpoint-signal", "SIGUSR2"}).checkpoint_signal == SIGUSR2);
    CHECK_THROWS_WITH(config_for({"--checkpoint-signal", "SIGKILL"}),
                      Catch::Contains("--checkpoint-signal 'SIGKILL'") && Catch::Contains("catch"));
    CHECK_THROWS_WITH(config_for({"--checkpoint-signal", "bogus"}), Catch::Contains("'bogus'"));
    CHECK_THROWS_WITH(config_for({"--checkpoint-grace", "-1"}),
                      Catch::Contains("--checkpoint-grace"));
}

TEST_CASE("resolve: PET_CHECKPOINT_SIGNAL and PET_CHECKPOINT_GRACE are the env fallbacks",
          "[launcher][checkpoint]") {
    ptrun::env::EnvMap env{{"PET_CHECKPOINT_SIGNAL", "SIGUSR1"}, {"PET_CHECKPOINT_GRACE", "7"}};
    auto c = config_for({}, env);
    CHECK(c.checkpoint_signal == SIGUSR1);
    CHECK(c.checkpoint_grace == std::chrono::seconds(7));
}

TEST_CASE("resolve: --requeue needs SLURM and a checkpoint signal", "[launcher][checkpoint]") {
    CHECK_THROWS_WITH(config_for({"--requeue", "--checkpoint-signal", "USR1"}),
                      Catch::Contains("--requeue: expected a SLURM job") &&
                          Catch::Contains("SLURM_JOB_ID unset"));
    // A batch script's environment on one node (slurm-cluster-notes.md, column A).
    ptrun::env::EnvMap slurm{{"SLURM_JOB_ID", "12"},          {"SLURM_PROCID", "0"},
                             {"SLURM_NODEID", "0"},           {"SLURM_LOCALID", "0"},
                             {"SLURM_NNODES", "1"},           {"SLURM_JOB_NUM_NODES", "1"},
                             {"SLURM_JOB_NODELIST", "node1"}, {"SLURM_NODELIST", "node1"},
                             {"SLURM_TASKS_PER_NODE", "1"},   {"SLURM_NTASKS", "1"}};
    auto c = config_for({"--requeue", "--checkpoint-signal", "USR1"}, slurm);
    CHECK(c.requeue);
    CHECK_THROWS_WITH(config_for({"--requeue"}, slurm),
                      Catch::Contains("--requeue without --checkpoint-signal"));
}

TEST_CASE("requeue_target: the task of node rank 0 requeues, the others do not",
          "[launcher][checkpoint]") {
    CHECK_FALSE(requeue_target({}));
    auto batch = requeue_target({{"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "0"}});
    REQUIRE(batch);
    CHECK(batch->job_id == "7");
    CHECK(batch->leader);
    CHECK_FALSE(requeue_target({{"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "1"}})->leader);
    CHECK_FALSE(requeue_target({{"SLURM_JOB_ID", "7"}, {"SLURM_NODEID", "1"}})->leader);
}
