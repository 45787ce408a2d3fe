#include "ptrun/env/worker_env.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::env;

TEST_CASE("worker_env sets torchrun's whole contract", "[env]") {
    WorkerIdentity id;
    id.local_rank = 1;
    id.rank = 3;
    id.group_rank = 1;
    id.role_rank = 3;
    id.local_world_size = 2;
    id.world_size = 4;
    id.group_world_size = 2;
    id.role_world_size = 4;
    id.master_addr = "10.0.0.1";
    id.master_port = 29500;
    id.restart_count = 2;
    id.max_restarts = 3;
    id.run_id = "job42";
    id.use_agent_store = true;
    id.error_file = "/tmp/e/error.json";
    auto env = worker_env(id, EnvMap{{"PATH", "/bin"}});
    CHECK(env["PATH"] == "/bin");
    CHECK(env["LOCAL_RANK"] == "1");
    CHECK(env["RANK"] == "3");
    CHECK(env["GROUP_RANK"] == "1");
    CHECK(env["ROLE_RANK"] == "3");
    CHECK(env["ROLE_NAME"] == "default");
    CHECK(env["LOCAL_WORLD_SIZE"] == "2");
    CHECK(env["WORLD_SIZE"] == "4");
    CHECK(env["GROUP_WORLD_SIZE"] == "2");
    CHECK(env["ROLE_WORLD_SIZE"] == "4");
    CHECK(env["MASTER_ADDR"] == "10.0.0.1");
    CHECK(env["MASTER_PORT"] == "29500");
    CHECK(env["TORCHELASTIC_RESTART_COUNT"] == "2");
    CHECK(env["TORCHELASTIC_MAX_RESTARTS"] == "3");
    CHECK(env["TORCHELASTIC_RUN_ID"] == "job42");
    CHECK(env["TORCHELASTIC_USE_AGENT_STORE"] == "True");
    CHECK(env["TORCHELASTIC_ERROR_FILE"] == "/tmp/e/error.json");
    CHECK(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1");
    CHECK(env["OMP_NUM_THREADS"] == "1");
}

TEST_CASE("worker_env keeps inherited OMP and NCCL settings", "[env]") {
    WorkerIdentity id;
    id.local_world_size = 4;
    auto env =
        worker_env(id, EnvMap{{"OMP_NUM_THREADS", "8"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}});
    CHECK(env["OMP_NUM_THREADS"] == "8");
    CHECK(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "0");
    CHECK(env["TORCHELASTIC_USE_AGENT_STORE"] == "False");
    CHECK(env.count("TORCHELASTIC_ERROR_FILE") == 0);
}

TEST_CASE("a single local worker gets no OMP_NUM_THREADS", "[env]") {
    WorkerIdentity id;
    CHECK(worker_env(id, {}).count("OMP_NUM_THREADS") == 0);
    CHECK_FALSE(sets_omp_num_threads({}, 1));
    CHECK(sets_omp_num_threads({}, 2));
}

TEST_CASE("use_libuv in --rdzv-conf reaches the workers as USE_LIBUV unless they have one",
          "[env]") {
    WorkerIdentity id;
    CHECK(worker_env(id, {}).count("USE_LIBUV") == 0);  // not asked: torch's own default
    id.use_libuv = false;
    CHECK(worker_env(id, {})["USE_LIBUV"] == "0");
    CHECK(worker_env(id, EnvMap{{"USE_LIBUV", "1"}})["USE_LIBUV"] == "1");  // the user's wins
    id.use_libuv = true;
    CHECK(worker_env(id, {})["USE_LIBUV"] == "1");
}

TEST_CASE("worker env: --requeue's count reaches the workers as PTRUN_REQUEUE_COUNT", "[env]") {
    WorkerIdentity id;
    CHECK(worker_env(id, {}).count("PTRUN_REQUEUE_COUNT") == 0);  // no --requeue: not set
    id.requeue_count = 1;
    CHECK(worker_env(id, EnvMap{{"PTRUN_REQUEUE_COUNT", "7"}})["PTRUN_REQUEUE_COUNT"] == "1");
}
