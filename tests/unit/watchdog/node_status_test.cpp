#include "ptrun/watchdog/node_status.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ptrun/watchdog/health_status.hpp"
#include "ptrun/watchdog/status_client.hpp"

using namespace ptrun::watchdog;

namespace {

/// Node `node_rank` of a 2-node job, 2 workers each, as its agent sees itself.
StatusSnapshot node(const std::string& host, int node_rank) {
    StatusSnapshot s;
    s.run_id = "job";
    s.host = host;
    s.node_rank = node_rank;
    s.world_size = 4;
    s.nodes = 2;
    const int base = node_rank * 2;
    s.workers = {WorkerStatus{0, base, 100 + base, WorkerState::Running, 7, 0.5, {}, ""},
                 WorkerStatus{1, base + 1, 101 + base, WorkerState::Starting, 0, {}, "ckpt", ""}};
    return s;
}

}  // namespace

TEST_CASE("a node's published status reads back, aged by the report's age",
          "[watchdog][node_status]") {
    auto published = node("node2", 1);
    published.last_failure = "worker rank 3 failed";
    const auto n = node_status_of(status_json(published), 2.0);
    REQUIRE(n);
    CHECK(n->host == "node2");
    CHECK(n->node_rank == 1);
    CHECK(n->phase == "running");
    CHECK(n->age_seconds == 2.0);
    CHECK(n->last_failure == "worker rank 3 failed");
    REQUIRE(n->workers.size() == 2);
    CHECK(n->workers[0].rank == 2);
    CHECK(n->workers[0].pid == 102);
    CHECK(n->workers[0].progress_count == 7);
    CHECK(n->workers[0].seconds_since_progress == Approx(2.5));
    CHECK_FALSE(n->workers[1].seconds_since_progress);
    CHECK(n->workers[1].section == "ckpt");
    CHECK(n->workers[1].state == WorkerState::Starting);
}

TEST_CASE("anything else from the network is not a node's status", "[watchdog][node_status]") {
    const std::string good = status_json(node("node2", 1));
    auto with = [&good](const char* pointer, nlohmann::json value) {
        auto doc = nlohmann::json::parse(good);
        doc[nlohmann::json::json_pointer(pointer)] = std::move(value);
        return doc.dump();
    };
    for (const std::string& text :
         {std::string(""), std::string("null"), std::string("[1]"), good.substr(0, 40),
          std::string("{\"host\":\"x\"}"), with("/host", 5), with("/node_rank", "1"),
          with("/node_rank", 1e30), with("/workers", "many"), with("/workers/0/state", "asleep"),
          with("/workers/0/rank", nullptr), with("/workers/0/progress_count", -1),
          with("/workers/1/section", 3), with("/workers/0", 1), with("/last_failure", 1)}) {
        INFO(text);
        CHECK_FALSE(node_status_of(text, 0));
    }
    nlohmann::json many = nlohmann::json::parse(good);
    many["workers"] = nlohmann::json::array();
    for (std::size_t i = 0; i <= kMaxNodeWorkers; ++i) many["workers"].push_back(nullptr);
    CHECK_FALSE(node_status_of(many.dump(), 0));
}

TEST_CASE("the store host's /status, /metrics and table cover every node",
          "[watchdog][node_status]") {
    StatusSnapshot s = node("node1", 0);
    auto other = node_status_of(status_json(node("node2", 1)), 1.5);
    REQUIRE(other);
    other->workers[1].state = WorkerState::Failed;
    other->workers[1].detail = "exit code 3";
    s.other_nodes.push_back(*other);

    CHECK(health_of(s).ok);  // /health: this node's workers
    const Health job = job_health_of(s);
    CHECK_FALSE(job.ok);
    CHECK(job.reason == "rank 3 (local rank 1, pid 103 on node2) failed: exit code 3");

    const auto doc = nlohmann::json::parse(status_json(s));
    CHECK(doc["healthy"] == false);
    REQUIRE(doc["workers"].size() == 4);
    for (std::size_t rank = 0; rank < 4; ++rank) {
        CHECK(doc["workers"][rank]["rank"] == rank);
        CHECK(doc["workers"][rank]["host"] == (rank < 2 ? "node1" : "node2"));
    }
    REQUIRE(doc["node_states"].size() == 2);
    CHECK(doc["node_states"][1]["host"] == "node2");
    CHECK(doc["node_states"][1]["age_seconds"] == 1.5);
    CHECK(doc["node_states"][1]["healthy"] == false);
    CHECK(doc["node_states"][0]["healthy"] == true);

    const std::string m = metrics_text(s);
    CHECK_THAT(m, Catch::Contains("ptrun_healthy 1\n") && Catch::Contains("ptrun_job_healthy 0\n"));
    CHECK_THAT(m, Catch::Contains("ptrun_workers{state=\"running\"} 1\n") &&
                      Catch::Contains("ptrun_job_workers{state=\"running\"} 2\n") &&
                      Catch::Contains("ptrun_job_workers{state=\"failed\"} 1\n"));
    CHECK_THAT(m,
               Catch::Contains(
                   "ptrun_worker_progress_total{host=\"node2\",rank=\"2\",local_rank=\"0\"} 7\n"));
    CHECK_THAT(m, Catch::Contains("ptrun_worker_seconds_since_progress{host=\"node2\",rank=\"2\","
                                  "local_rank=\"0\"} 2\n"));
    CHECK_THAT(m, Catch::Contains("ptrun_node_report_age_seconds{host=\"node2\",node_rank=\"1\"} "
                                  "1.5\n"));

    const auto table = status_table(status_json(s));
    REQUIRE(table);
    CHECK_FALSE(table->healthy);
    CHECK_THAT(table->text, Catch::Contains("workers      : 2 here, 4 in the job on 2 node(s)\n"));
    CHECK_THAT(table->text, Catch::Contains("NODE  HOST"));
    CHECK_THAT(table->text,
               Catch::Contains("\n1     node2                running          2    1.5 s  "
                               "rank 3 (local rank 1, pid 103) failed: exit code 3\n"));
    CHECK_THAT(table->text,
               Catch::Contains("\nnode2                3      1      103      failed "));
}

TEST_CASE("what each worker used travels with a node's status", "[watchdog][node_status]") {
    auto published = node("node2", 1);
    published.workers[0].memory_bytes = 50U << 20;
    published.workers[0].peak_memory_bytes = 60U << 20;
    published.workers[0].cpu_seconds = 2.5;
    published.workers[0].oom_kills = 1;
    const auto n = node_status_of(status_json(published), 0.5);
    REQUIRE(n);
    CHECK(n->workers[0].memory_bytes == 50U << 20);
    CHECK(n->workers[0].peak_memory_bytes == 60U << 20);
    CHECK(n->workers[0].cpu_seconds == 2.5);
    CHECK(n->workers[0].oom_kills == 1);
    CHECK_FALSE(n->workers[1].memory_bytes);  // unknown stays unknown
    CHECK_FALSE(n->workers[1].cpu_seconds);
    // An older ptrun's report has none of them.
    auto doc = nlohmann::json::parse(status_json(published));
    for (auto& w : doc["workers"]) {
        for (const char* key : {"memory_bytes", "peak_memory_bytes", "cpu_seconds", "oom_kills"})
            w.erase(key);
    }
    const auto old = node_status_of(doc.dump(), 0);
    REQUIRE(old);
    CHECK_FALSE(old->workers[0].memory_bytes);
    CHECK(old->workers[0].oom_kills == 0);
}
