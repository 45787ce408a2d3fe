#include "ptrun/launcher/plan/launch_config.hpp"

#include <catch2/catch.hpp>
#include <csignal>

#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;

namespace {

LaunchConfig config_for(std::vector<std::string> args, HostFacts host = {},
                        ptrun::env::EnvMap env = {}) {
    args.push_back("train");
    return resolve(std::get<LaunchOptions>(parse_command_line(args, env)), host);
}

}  // namespace

TEST_CASE("resolve: nproc-per-node accepts integers, auto, cpu and gpu", "[launcher][config]") {
    HostFacts host;
    host.cpu_count = 8;
    host.gpus = ptrun::env::parse_cuda_visible_devices("0,1");
    CHECK(config_for({"--nproc-per-node", "3"}, host).nproc_per_node == 3);
    CHECK(config_for({"--nproc-per-node", "cpu"}, host).nproc_per_node == 8);
    CHECK(config_for({"--nproc-per-node", "gpu"}, host).nproc_per_node == 2);
    CHECK(config_for({"--nproc-per-node", "auto"}, host).nproc_per_node == 2);
    host.gpus.clear();
    CHECK(config_for({"--nproc-per-node", "auto"}, host).nproc_per_node == 8);
    CHECK_THROWS_WITH(config_for({"--nproc-per-node", "gpu"}, host), Catch::Contains("no GPU"));
    CHECK_THROWS_WITH(config_for({"--nproc-per-node", "0"}, host), Catch::Contains("'0'"));
    CHECK_THROWS_WITH(config_for({"--nproc-per-node", "two"}, host), Catch::Contains("'two'"));
}

TEST_CASE("resolve: standalone picks a random run id unless one is given", "[launcher][config]") {
    HostFacts host;
    host.random_id = "abc123";
    CHECK(config_for({"--standalone"}, host).run_id == "abc123");
    CHECK(config_for({"--standalone", "--rdzv-id", "mine"}, host).run_id == "mine");
    CHECK(config_for({}, host).run_id == "none");
    CHECK(config_for({"--standalone"}, host).rdzv_backend == RdzvBackend::C10d);
}

TEST_CASE("resolve: multi-node jobs meet at the c10d endpoint or static's master address",
          "[launcher][config]") {
    auto c = config_for({"--nnodes", "2:3", "--rdzv-endpoint", "head:29411", "--rdzv-id", "j"});
    CHECK(c.multi_node());
    CHECK(c.rdzv_backend == RdzvBackend::C10d);  // an endpoint without a backend means c10d
    CHECK(c.rendezvous_store == HostPort{"head", 29411});
    CHECK_FALSE(c.node_rank_given);
    CHECK(config_for({"--nnodes", "2", "--rdzv-endpoint", "[fd00::1]"}).rendezvous_store ==
          HostPort{"fd00::1", 29400});
    auto s = config_for(
        {"--nnodes", "2", "--node-rank", "1", "--master-addr", "n0", "--master-port", "1234"});
    CHECK(s.rdzv_backend == RdzvBackend::Static);
    CHECK(s.rendezvous_store == HostPort{"n0", 1234});
    CHECK(s.rdzv.is_host == false);
    CHECK(config_for({"--nnodes", "2", "--master-addr", "n0"}).rdzv.is_host == true);
    CHECK(config_for({"--standalone", "--rdzv-conf", "use_libuv=0"}).rdzv.use_libuv == false);
    CHECK_FALSE(config_for({"--standalone"}).rdzv.use_libuv);
    CHECK(config_for({"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1",
                      "--rdzv-conf", "join_timeout=5,heartbeat=0.5,keep_alive_max_attempt=4"})
              .rdzv.heartbeat == std::chrono::milliseconds(500));
    // Seconds round to the nearest millisecond.
    CHECK(config_for({"--nnodes", "2", "--rdzv-endpoint", "h:1", "--rdzv-conf", "heartbeat=0.0016"})
              .rdzv.heartbeat == std::chrono::milliseconds(2));
    CHECK(config_for({"--nnodes", "2", "--rdzv-endpoint", "h:1", "--rdzv-conf", "heartbeat=1.2344"})
              .rdzv.heartbeat == std::chrono::milliseconds(1234));
}

TEST_CASE("resolve: inconsistent multi-node options are refused naming the value",
          "[launcher][config]") {
    CHECK_THROWS_WITH(config_for({"--nnodes", "2", "--rdzv-backend", "c10d"}),
                      Catch::Contains("--rdzv-endpoint ''"));
    CHECK_THROWS_WITH(config_for({"--nnodes", "2", "--rdzv-endpoint", "h:0"}),
                      Catch::Contains("fixed port"));
    CHECK_THROWS_WITH(config_for({"--nnodes", "2", "--rdzv-endpoint", "h:x"}),
                      Catch::Contains("'h:x'"));
    CHECK_THROWS_WITH(config_for({"--nnodes", "1:2", "--rdzv-backend", "static"}),
                      Catch::Contains("fixed node count"));
    CHECK_THROWS_WITH(config_for({"--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "h"}),
                      Catch::Contains("--node-rank 2"));
    CHECK_THROWS_WITH(config_for({"--node-rank", "1"}), Catch::Contains("single-node"));
    CHECK_THROWS_WITH(config_for({"--rdzv-conf", "join_timeout=-1"}),
                      Catch::Contains("join_timeout=-1"));
    CHECK_THROWS_WITH(config_for({"--rdzv-conf", "bogus=1"}), Catch::Contains("'bogus'"));
    CHECK_THROWS_WITH(config_for({"--standalone", "--nnodes", "2"}),
                      Catch::Contains("single node"));
}

TEST_CASE("resolve: etcd-v2 reads every member and is multi-node even on one node",
          "[launcher][config][etcd]") {
    auto c = config_for({"--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "e1:2379,e2,[::1]:2380",
                         "--rdzv-id", "j"});
    CHECK(c.rdzv_backend == RdzvBackend::Etcd);
    CHECK(c.nnodes.max == 1);
    CHECK(c.multi_node());
    CHECK(c.etcd.endpoints == std::vector<HostPort>{{"e1", 2379}, {"e2", 2379}, {"::1", 2380}});
    CHECK_FALSE(c.etcd.https);
    CHECK(c.rendezvous_store.host.empty());  // no node hosts the store
    CHECK_FALSE(c.master_port);
    CHECK_FALSE(c.rdzv.is_host);
    CHECK_FALSE(c.node_rank_given);
    CHECK(config_for({"--rdzv-backend", "etcd", "--rdzv-endpoint", "e1"}).rdzv_backend ==
          RdzvBackend::Etcd);
    // MIN:MAX, like c10d, and the rendezvous's timeouts
    auto elastic = config_for({"--rdzv-backend", "etcd-v2", "--nnodes", "2:4", "--rdzv-endpoint",
                               "https://e1", "--rdzv-conf", "join_timeout=5,last_call_timeout=1"});
    CHECK(elastic.nnodes.min == 2);
    CHECK(elastic.nnodes.max == 4);
    CHECK(elastic.etcd.https);
    CHECK(elastic.rdzv.join_timeout == std::chrono::milliseconds(5000));
    CHECK(config_for({"--rdzv-backend", "etcd-v2", "--nnodes", "3", "--node-rank", "2",
                      "--rdzv-endpoint", "e1"})
              .node_rank == 2);
    // the other backends leave it empty
    CHECK(config_for({"--nnodes", "2", "--rdzv-endpoint", "h"}).etcd.endpoints.empty());
}

TEST_CASE("resolve: PET_RDZV_BACKEND=etcd-v2 and PET_RDZV_ENDPOINT name the etcd members",
          "[launcher][config][etcd]") {
    auto c =
        config_for({}, {}, {{"PET_RDZV_BACKEND", "etcd-v2"}, {"PET_RDZV_ENDPOINT", "e1,e2:1"}});
    CHECK(c.rdzv_backend == RdzvBackend::Etcd);
    CHECK(c.etcd.endpoints == std::vector<HostPort>{{"e1", 2379}, {"e2", 1}});
    CHECK_THROWS_WITH(
        config_for({"--rdzv-backend", "etcd-v2"}, {}, {{"PET_RDZV_ENDPOINT", "e1,,"}}),
        Catch::Contains("--rdzv-endpoint 'e1,,': member 2 is empty") &&
            Catch::Contains("(from PET_RDZV_ENDPOINT)"));
    CHECK_THROWS_WITH(config_for({"--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "e1"}, {},
                                 {{"PET_RDZV_CONF", "protocol=tcp"}}),
                      "--rdzv-conf protocol=tcp: expected http or https (from PET_RDZV_CONF)");
}

TEST_CASE("resolve: etcd-v2 needs its members and refuses what it cannot honour",
          "[launcher][config][etcd]") {
    CHECK_THROWS_WITH(config_for({"--rdzv-backend", "etcd-v2"}),
                      "--rdzv-backend etcd-v2 needs --rdzv-endpoint naming the etcd members (e.g. "
                      "--rdzv-endpoint etcd1:2379,etcd2:2379,etcd3:2379)");
    CHECK_THROWS_WITH(config_for({"--rdzv-backend", "etcd", "--nnodes", "4"}),
                      Catch::Contains("needs --rdzv-endpoint"));
    CHECK_THROWS_WITH(config_for({"--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "e1",
                                  "--rdzv-conf", "is_host=true"}),
                      Catch::Contains("--rdzv-conf is_host=true: etcd-v2 elects the coordinator"));
    CHECK_THROWS_WITH(config_for({"--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "e1,e1"}),
                      Catch::Contains("the same member"));
    CHECK_THROWS_WITH(config_for({"--rdzv-backend", "etcd-v2", "--nnodes", "2", "--node-rank", "2",
                                  "--rdzv-endpoint", "e1"}),
                      Catch::Contains("--node-rank 2"));
    CHECK_THROWS_WITH(
        config_for({"--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "e1", "--node-rank", "1"}),
        Catch::Contains("--node-rank 1: expected a node rank below --nnodes"));
}

TEST_CASE("resolve: etcd's --rdzv-conf keys only apply to etcd-v2", "[launcher][config][etcd]") {
    for (auto item : {"protocol=https", "cacert=ca.pem", "ca_cert=ca.pem", "cert=c.pem",
                      "ssl_cert=c.pem", "key=k.pem", "ssl_cert_key=k.pem"}) {
        INFO(item);
        CHECK_THROWS_WITH(
            config_for({"--nnodes", "2", "--rdzv-endpoint", "h", "--rdzv-conf", item}),
            "--rdzv-conf " + std::string(item) +
                ": only applies to --rdzv-backend etcd-v2 (the backend is c10d)");
        CHECK_THROWS_WITH(config_for({"--rdzv-conf", item}),
                          Catch::Contains("(the backend is static)"));
    }
    // --standalone overrides etcd as it overrides the others: a local store on a free port.
    auto s = config_for({"--standalone", "--rdzv-backend", "etcd-v2", "--rdzv-endpoint",
                         "e1:2379,e2:2379", "--rdzv-conf", "protocol=https"});
    CHECK(s.rdzv_backend == RdzvBackend::C10d);
    CHECK_FALSE(s.multi_node());
    CHECK_FALSE(s.master_port);
    CHECK(s.etcd.endpoints.empty());
    CHECK_THROWS_WITH(config_for({"--standalone", "--rdzv-conf", "protocol=https"}),
                      Catch::Contains("only applies to --rdzv-backend etcd-v2"));
}

TEST_CASE("resolve: store port from --master-port or the c10d endpoint", "[launcher][config]") {
    CHECK_FALSE(config_for({}).master_port);
    CHECK(config_for({"--master-port", "29501"}).master_port == 29501);
    CHECK(
        config_for({"--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:29400"}).master_port ==
        29400);
    CHECK(config_for({"--rdzv-endpoint", "[::1]:29401"}).master_port == 29401);
    CHECK_FALSE(config_for({"--rdzv-endpoint", "localhost:0"}).master_port);
    CHECK_FALSE(config_for({"--rdzv-endpoint", "localhost"}).master_port);
    CHECK_THROWS_WITH(config_for({"--rdzv-endpoint", "localhost:x"}),
                      Catch::Contains("--rdzv-endpoint 'localhost:x'"));
    CHECK_THROWS_WITH(config_for({"--master-port", "70000"}),
                      Catch::Contains("--master-port '70000'"));
    CHECK_THROWS_WITH(config_for({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h:x"}),
                      Catch::Contains("--rdzv-endpoint 'h:x'"));
}

TEST_CASE("resolve: signals, timeouts and filters", "[launcher][config]") {
    auto c = config_for({"--signals-to-handle", "SIGTERM,USR1,2", "--shutdown-timeout", "1.5",
                         "--local-ranks-filter", "0,3", "--nproc-per-node", "4"});
    CHECK(c.signals_to_handle == std::vector<int>{SIGTERM, SIGUSR1, SIGINT});
    CHECK(c.shutdown_timeout.count() == 1500);
    CHECK(*c.local_ranks_filter == std::set<int>{0, 3});
    CHECK_THROWS_WITH(config_for({"--signals-to-handle", "SIGKILL"}), Catch::Contains("SIGKILL"));
    CHECK_THROWS_WITH(config_for({"--local-ranks-filter", "a"}), Catch::Contains("'a'"));
    CHECK_THROWS_WITH(
        config_for({"--local-ranks-filter", "5", "--nproc-per-node", "2"}),
        Catch::Contains("local rank 5 does not exist") && Catch::Contains("local ranks 0-1"));
    CHECK_THROWS_WITH(config_for({"--monitor-interval", "0"}), Catch::Contains("positive"));
    CHECK_THROWS_WITH(config_for({"--start-method", "x"}),
                      Catch::Contains("spawn, fork or forkserver"));
}

TEST_CASE("resolve: a bad PET_ value names its variable", "[launcher][config]") {
    CHECK_THROWS_WITH(config_for({}, {}, {{"PET_MAX_RESTARTS", "many"}}),
                      "--max-restarts 'many' (from PET_MAX_RESTARTS): expected an integer from 0 "
                      "to 1000000");
    CHECK_THROWS_WITH(config_for({}, {}, {{"PET_NNODES", "3:2"}}),
                      Catch::StartsWith("--nnodes '3:2'") && Catch::EndsWith("(from PET_NNODES)"));
    CHECK_THROWS_WITH(config_for({}, {}, {{"PET_TEE", "9"}}),
                      Catch::StartsWith("--tee '9'") && Catch::EndsWith("(from PET_TEE)"));
    CHECK_THROWS_WITH(config_for({}, {}, {{"PET_RDZV_CONF", "join_timeout"}}),
                      Catch::EndsWith("(from PET_RDZV_CONF)"));
    CHECK_THROWS_WITH(config_for({"--nnodes", "3:2"}), !Catch::Contains("(from"));
    CHECK_THROWS_WITH(config_for({}, {}, {{"PET_STANDALONE", "maybe"}}),
                      "--standalone 'maybe' (from PET_STANDALONE): expected 1/true/yes or "
                      "0/false/no");
}

TEST_CASE("resolve: torchrun 2.x's plug-in options are refused by name, saying why",
          "[launcher][config]") {
    CHECK_THROWS_WITH(config_for({"--logs-specs", "mypkg"}),
                      Catch::StartsWith("--logs-specs 'mypkg': names a Python entry point (group "
                                        "torchrun.logs_specs)") &&
                          Catch::Contains("--log-dir, --redirects and --tee"));
    CHECK_THROWS_AS(config_for({"--logs_specs", "mypkg"}), UsageError);
    CHECK_THROWS_WITH(config_for({}, {}, {{"PET_EVENT_LOG_HANDLER", "console"}}),
                      Catch::StartsWith("--event-log-handler 'console' (from "
                                        "PET_EVENT_LOG_HANDLER): names a handler of torch's "
                                        "elastic events"));
    CHECK_NOTHROW(config_for({"--event-log-handler", "null"}));
    CHECK_NOTHROW(config_for({"--event_log_handler=null"}));
}

TEST_CASE("resolve: placement options and output filters, from flags or PET_ variables",
          "[launcher][config]") {
    HostFacts host;
    host.gpus = ptrun::env::parse_cuda_visible_devices("0,1,2,3");
    auto c = config_for({"--nproc_per_node", "gpu:1-2", "--virtual_local_rank", "--numa_binding",
                         "socket", "--report_bindings", "--duplicate_stdout_filters", "loss,,x,acc",
                         "--duplicate-stderr-filters", "NCCL WARN"},
                        host);
    CHECK(c.nproc_per_node == 2);
    CHECK(ptrun::env::cuda_visible_devices_value(c.gpu_selection) == "1,2");
    CHECK(c.virtual_local_rank);
    CHECK(c.numa_binding == ptrun::placement::BindingMode::Socket);
    CHECK(c.report_bindings);
    CHECK(c.stdout_filters == std::vector<std::string>{"loss,x", "acc"});
    CHECK(c.stderr_filters == std::vector<std::string>{"NCCL WARN"});
    auto e = config_for({}, host,
                        {{"PET_NPROC_PER_NODE", "gpu:3"},
                         {"PET_VIRTUAL_LOCAL_RANK", "1"},
                         {"PET_NUMA_BINDING", "exclusive"},
                         {"PET_REPORT_BINDINGS", "true"},
                         {"PET_DUPLICATE_STDOUT_FILTERS", "a"},
                         {"PET_DUPLICATE_STDERR_FILTERS", "b"}});
    CHECK(ptrun::env::cuda_visible_devices_value(e.gpu_selection) == "3");
    CHECK(e.virtual_local_rank);
    CHECK(e.numa_binding == ptrun::placement::BindingMode::Exclusive);
    CHECK(e.report_bindings);
    CHECK(e.stdout_filters == std::vector<std::string>{"a"});
    CHECK(e.stderr_filters == std::vector<std::string>{"b"});
    auto d = config_for({}, host);
    CHECK_FALSE(d.numa_binding);
    CHECK_FALSE(d.virtual_local_rank);
    CHECK(d.gpu_selection.empty());
    CHECK(d.stdout_filters.empty());
    CHECK_THROWS_WITH(config_for({"--duplicate-stdout-filters", "a,"}, host),
                      Catch::Contains("filter 2 is empty"));
    CHECK_THROWS_WITH(config_for({}, host, {{"PET_NPROC_PER_NODE", "gpu:9"}}),
                      Catch::Contains("PET_") && Catch::Contains("device 9"));
}

TEST_CASE("resolve: the watchdog's options are off unless given", "[launcher][config]") {
    auto off = config_for({});
    CHECK_FALSE(off.hang_timeout);
    CHECK_FALSE(off.health_port);
    CHECK(off.health_addr == "127.0.0.1");                          // loopback by default
    CHECK_FALSE(config_for({"--hang-timeout", "0"}).hang_timeout);  // 0: off, as unset
    CHECK(config_for({"--hang-timeout", "2.5"}).hang_timeout == std::chrono::milliseconds(2500));
    CHECK(config_for({"--hang_timeout", "30"}).hang_timeout == std::chrono::seconds(30));
    CHECK(config_for({}, {}, {{"PET_HANG_TIMEOUT", "7"}}).hang_timeout == std::chrono::seconds(7));
    CHECK_THROWS_WITH(config_for({"--hang-timeout", "soon"}),
                      Catch::Contains("--hang-timeout 'soon'") &&
                          Catch::Contains("non-negative number of seconds"));
    CHECK_THROWS_WITH(config_for({"--hang-timeout", "-1"}), Catch::Contains("'-1'"));
    auto health = config_for({"--health-port", "0", "--health-addr", "::1"});
    CHECK(health.health_port == 0);
    CHECK(health.health_addr == "::1");
    CHECK(config_for({"--health_port", "8080"}).health_port == 8080);
    CHECK_THROWS_WITH(config_for({"--health-port", "70000"}),
                      Catch::Contains("--health-port '70000'") && Catch::Contains("0 to 65535"));
    CHECK_THROWS_WITH(
        config_for({"--health-port", "1", "--health-addr", "localhost"}),
        Catch::Contains("--health-addr 'localhost'") && Catch::Contains("numeric IPv4 or IPv6"));
}

TEST_CASE("resolve: --preload takes comma-separated module names", "[launcher][config]") {
    CHECK(config_for({"--preload", "torch,numpy.linalg,torch"}).preload ==
          std::vector<std::string>{"torch", "numpy.linalg"});
    CHECK(config_for({}, {}, {{"PET_PRELOAD", "torch"}}).preload ==
          std::vector<std::string>{"torch"});
    CHECK(config_for({}).preload.empty());
    for (std::string bad : {"tor ch", "torch,", ".torch", "torch..nn", "1torch", "a-b"}) {
        CHECK_THROWS_WITH(config_for({"--preload", bad}),
                          Catch::Contains("is not a Python module name (expected comma-separated "
                                          "module names, e.g. torch,numpy)"));
    }
}
