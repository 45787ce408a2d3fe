// The command a waiting node prints for adding a node: it must work when pasted (issue 35.17).
#include "ptrun/launcher/membership/wait_progress.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::launcher;

namespace {

LaunchConfig job() {
    LaunchConfig c;
    c.nnodes = {2, 4};
    c.nproc_per_node = 8;
    c.max_restarts = 3;
    c.run_id = "job7";
    c.program = "train.py";
    c.program_args = {"--lr", "3e-4"};
    return c;
}

}  // namespace

TEST_CASE("the join command carries the backend, every etcd member, MIN:MAX and --rdzv-conf",
          "[launcher][waiting]") {
    auto c = job();
    c.rdzv_backend = RdzvBackend::Etcd;
    c.etcd.endpoints = {{"10.0.0.1", 2379}, {"10.0.0.2", 2379}};
    c.rdzv_conf = {{"join_timeout", "900"}, {"last_call_timeout", "15"}};
    CHECK(join_command(c) ==
          "ptrun --nnodes 2:4 --nproc-per-node 8 --max-restarts 3 --rdzv-endpoint "
          "10.0.0.1:2379,10.0.0.2:2379 --rdzv-backend etcd-v2 --rdzv-id job7 --rdzv-conf "
          "join_timeout=900,last_call_timeout=15 train.py --lr 3e-4");
    c.etcd.https = true;  // given as https:// members: the scheme goes with them
    CHECK_THAT(join_command(c),
               Catch::Contains("--rdzv-endpoint https://10.0.0.1:2379,https://10.0.0.2:2379 "));

    auto d = job();
    d.rdzv_backend = RdzvBackend::C10d;
    d.rendezvous_store = {"10.0.0.5", 29400};
    d.rdzv_conf = {{"key_file", "/etc/ptrun key"}};
    CHECK(join_command(d) ==
          "ptrun --nnodes 2:4 --nproc-per-node 8 --max-restarts 3 --rdzv-endpoint 10.0.0.5:29400 "
          "--rdzv-backend c10d --rdzv-id job7 --rdzv-conf 'key_file=/etc/ptrun key' train.py --lr "
          "3e-4");
}
