#include "ptrun/watchdog/http_exchange.hpp"

#include <catch2/catch.hpp>
#include <sstream>

using namespace ptrun::watchdog;

namespace {

StatusSnapshot healthy() {
    StatusSnapshot s;
    s.run_id = "job7";
    s.round = 2;
    s.restart_count = 1;
    s.workers = {WorkerStatus{0, 4, 100, WorkerState::Running, 42, 0.5, std::nullopt, ""},
                 WorkerStatus{1, 5, 101, WorkerState::Starting, 0, std::nullopt, "checkpoint", ""}};
    return s;
}

}  // namespace

TEST_CASE("request heads end at the first blank line", "[watchdog][health]") {
    CHECK_FALSE(request_head_end("GET / HTTP/1.1\r\nHost: x\r\n"));
    CHECK(request_head_end("GET / HTTP/1.1\r\n\r\nbody") == 18);
    CHECK(request_head_end("GET / HTTP/1.0\n\n") == 16);
}

TEST_CASE("request lines parse or answer 400/505", "[watchdog][health]") {
    auto ok = parse_request_head("GET /health?verbose=1 HTTP/1.1\r\nHost: a\r\n\r\n");
    REQUIRE(ok.request);
    CHECK(*ok.request == HttpRequest{"GET", "/health"});
    struct Row {
        const char* head;
        int status;
    };
    for (const Row& row :
         {Row{"GET /health\r\n\r\n", 400}, Row{"GET  /health HTTP/1.1\r\n\r\n", 400},
          Row{"GET /health HTTP/2.0\r\n\r\n", 505}, Row{"GET /health FTP/1.0\r\n\r\n", 400},
          Row{"GET http://x/health HTTP/1.1\r\n\r\n", 400},
          Row{"G(T /health HTTP/1.1\r\n\r\n", 400}, Row{"GET /he\x01lth HTTP/1.1\r\n\r\n", 400},
          Row{"\r\n\r\n", 400}}) {
        INFO(row.head);
        auto p = parse_request_head(row.head);
        CHECK_FALSE(p.request);
        CHECK(p.error.status == row.status);
    }
}

TEST_CASE("/health answers 200 while every worker is fine, else 503 with the reason",
          "[watchdog][health]") {
    StatusSnapshot s = healthy();
    auto r = answer({"GET", "/health"}, s);
    CHECK(r.status == 200);
    CHECK(r.body == "ok\n");
    s.workers.push_back(WorkerStatus{2, 6, 102, WorkerState::Succeeded, 9, 3.0, {}, ""});
    CHECK(answer({"GET", "/health"}, s).status == 200);
    s.workers.push_back(
        WorkerStatus{3, 7, 103, WorkerState::Hung, 9, 75.0, {}, "no progress for 75 s (9 beats)"});
    r = answer({"GET", "/health"}, s);
    CHECK(r.status == 503);
    CHECK(r.body == "rank 7 (local rank 3, pid 103) hung: no progress for 75 s (9 beats)\n");
    for (auto state : {WorkerState::Stopped, WorkerState::Failed}) {
        StatusSnapshot one = healthy();
        one.workers[0].state = state;
        CHECK(answer({"GET", "/health"}, one).status == 503);
    }
    CHECK(answer({"GET", "/health"}, StatusSnapshot{}).status == 200);  // between attempts
}

TEST_CASE("/status and /metrics carry the latest ready attempt", "[watchdog][health]") {
    StatusSnapshot s = healthy();
    s.ready_attempt = 1;
    s.ready_line = "attempt 1: 2 ranks on 1 node ready 1.00 s after the restart: ...";
    s.ready_seconds = 1.0;
    s.startup_phases = {{"spawn", 0.25}, {"first_progress", 0.75}};
    const auto status = answer({"GET", "/status"}, s).body;
    CHECK(status.find(
              "\"ready\":{\"attempt\":1,\"line\":\"attempt 1: 2 ranks on 1 node ready 1.00 s after "
              "the "
              "restart: "
              "...\",\"phases\":[[\"spawn\",0.25],[\"first_progress\",0.75]],\"seconds\":1.0}") !=
          std::string::npos);
    const auto metrics = answer({"GET", "/metrics"}, s).body;
    CHECK(metrics.find("ptrun_startup_seconds 1\n") != std::string::npos);
    CHECK(metrics.find("ptrun_startup_phase_seconds{phase=\"spawn\"} 0.25\n") != std::string::npos);
    CHECK(metrics.find("ptrun_startup_phase_seconds{phase=\"first_progress\"} 0.75\n") !=
          std::string::npos);
}

TEST_CASE("/status is the snapshot as JSON", "[watchdog][health]") {
    StatusSnapshot s = healthy();
    s.run_id = "job\"7\xff";  // quoted, and an invalid UTF-8 byte replaced
    const auto r = answer({"GET", "/status"}, s);
    CHECK(r.status == 200);
    CHECK(r.content_type == "application/json");
    CHECK(r.body ==
          "{\"generation\":0,\"hangs\":0,\"health_endpoint\":null,\"healthy\":true,"
          "\"host\":\"\",\"last_failure\":null,"
          "\"log_dir\":null,"
          "\"node_rank\":0,\"node_states\":[{\"age_seconds\":0.0,"
          "\"health_endpoint\":null,\"healthy\":true,\"host\":\"\","
          "\"last_failure\":null,\"node_rank\":0,\"phase\":\"running\",\"reason\":\"ok\","
          "\"workers\":2}],"
          "\"nodes\":1,\"phase\":\"running\",\"ready\":null,\"reason\":\"ok\",\"restart_count\":1,"
          "\"round\":2,\"run_id\":\"job\\\"7\xef\xbf\xbd\",\"spares\":[],\"uptime_seconds\":0.0,"
          "\"workers\":[{\"cpu_seconds\":null,\"detail\":\"\",\"host\":\"\","
          "\"local_rank\":0,\"memory_bytes\":null,\"node_rank\":0,\"oom_kills\":0,"
          "\"peak_memory_bytes\":null,\"pid\":100,\"progress_count\":42,\"rank\":4,"
          "\"seconds_since_progress\":0.5,\"section\":null,\"state\":\"running\"},"
          "{\"cpu_seconds\":null,\"detail\":\"\",\"host\":\"\",\"local_rank\":1,"
          "\"memory_bytes\":null,\"node_rank\":0,\"oom_kills\":0,"
          "\"peak_memory_bytes\":null,\"pid\":101,\"progress_count\":0,\"rank\":5,"
          "\"seconds_since_progress\":null,\"section\":\"checkpoint\",\"state\":\"starting\"}],"
          "\"world_size\":0}\n");
    s.host = "node1";
    s.log_dir = "/logs/run";
    s.last_failure =
        "worker rank 4 (local rank 0, pid 99) failed: exit code 1 at 2026-11-27T13:05:01.123Z";
    s.hangs = 2;
    s.world_size = 8;
    s.nodes = 2;
    s.uptime_seconds = 12.5;
    const auto full = answer({"GET", "/status"}, s).body;
    CHECK_THAT(full,
               Catch::Contains("\"host\":\"node1\"") &&
                   Catch::Contains("\"log_dir\":\"/logs/run\"") &&
                   Catch::Contains("\"last_failure\":\"worker rank 4 (local rank 0, pid 99)") &&
                   Catch::Contains("\"hangs\":2") && Catch::Contains("\"world_size\":8") &&
                   Catch::Contains("\"nodes\":2") && Catch::Contains("\"uptime_seconds\":12.5"));
}

TEST_CASE("/metrics is the snapshot in Prometheus's text format", "[watchdog][health]") {
    StatusSnapshot s = healthy();
    s.host = "node\"1\n";  // escaped in a label value
    s.world_size = 8;
    s.nodes = 2;
    s.hangs = 1;
    s.uptime_seconds = 3.25;
    const auto r = answer({"GET", "/metrics"}, s);
    CHECK(r.status == 200);
    CHECK(r.content_type == "text/plain; version=0.0.4; charset=utf-8");
    const std::string& m = r.body;
    CHECK_THAT(
        m, Catch::Contains(
               "# TYPE ptrun_info gauge\nptrun_info{run_id=\"job7\",host=\"node\\\"1\\n\"} 1\n"));
    CHECK_THAT(m, Catch::Contains("ptrun_uptime_seconds 3.25\n"));
    CHECK_THAT(m, Catch::Contains("ptrun_workers{state=\"running\"} 1\n") &&
                      Catch::Contains("ptrun_workers{state=\"starting\"} 1\n") &&
                      Catch::Contains("ptrun_workers{state=\"failed\"} 0\n"));
    CHECK_THAT(m, Catch::Contains("ptrun_world_size 8\n") && Catch::Contains("ptrun_nodes 2\n") &&
                      Catch::Contains("ptrun_round 2\n"));
    CHECK_THAT(m, Catch::Contains("# TYPE ptrun_restarts_total counter\nptrun_restarts_total 1\n"));
    CHECK_THAT(m, Catch::Contains("ptrun_hangs_total 1\n") && Catch::Contains("ptrun_healthy 1\n"));
    CHECK_THAT(m,
               Catch::Contains("ptrun_worker_progress_total{host=\"node\\\"1\\n\",rank=\"4\","
                               "local_rank=\"0\"} 42\n") &&
                   Catch::Contains("ptrun_worker_progress_total{host=\"node\\\"1\\n\",rank=\"5\","
                                   "local_rank=\"1\"} 0\n"));
    CHECK_THAT(m, Catch::Contains("ptrun_worker_seconds_since_progress{host=\"node\\\"1\\n\","
                                  "rank=\"4\",local_rank=\"0\"} 0.5\n"));
    CHECK_THAT(m, !Catch::Contains(
                      "seconds_since_progress{host=\"node\\\"1\\n\",rank=\"5\""));  // never beaten
    CHECK_THAT(m, Catch::Contains("ptrun_job_healthy 1\n") &&
                      Catch::Contains("ptrun_job_workers{state=\"running\"} 1\n"));
    CHECK_THAT(m, !Catch::Contains("ptrun_node_report_age_seconds"));  // one node
    CHECK_THAT(m, !Catch::Contains("ptrun_store_"));  // not the node hosting the store
    s.store = StoreNumbers{3, 10, 2048};
    const auto with_store = answer({"GET", "/metrics"}, s).body;
    CHECK_THAT(with_store, Catch::Contains("# TYPE ptrun_store_connections gauge\n"
                                           "ptrun_store_connections 3\n") &&
                               Catch::Contains("ptrun_store_keys 10\n") &&
                               Catch::Contains("ptrun_store_bytes 2048\n"));
    // Every sample line belongs to a family declared by HELP and TYPE lines before it.
    std::string family;
    std::istringstream lines(m);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("# TYPE ", 0) == 0) family = line.substr(7, line.find(' ', 7) - 7);
        if (line.empty() || line[0] == '#') continue;
        CHECK(line.rfind(family, 0) == 0);
    }
}

TEST_CASE("other paths and methods get 404 and 405, HEAD has no body", "[watchdog][health]") {
    const StatusSnapshot s = healthy();
    CHECK(answer({"GET", "/"}, s).status == 404);
    CHECK(answer({"POST", "/health"}, s).status == 405);
    const auto head = answer({"HEAD", "/health"}, s);
    CHECK(head.status == 200);
    const std::string wire = serialize(head);
    CHECK(wire ==
          "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n"
          "Connection: close\r\nCache-Control: no-store\r\n\r\n");
    CHECK_THAT(serialize(answer({"DELETE", "/status"}, s)),
               Catch::StartsWith("HTTP/1.1 405 Method Not Allowed\r\n") &&
                   Catch::Contains("Allow: GET, HEAD\r\n") &&
                   Catch::EndsWith("only GET and HEAD\n"));
}

TEST_CASE("/status and /metrics say what each worker used", "[watchdog][health][usage]") {
    StatusSnapshot s = healthy();
    s.host = "node1";
    s.workers[0].memory_bytes = 52428800;
    s.workers[0].peak_memory_bytes = 62914560;
    s.workers[0].cpu_seconds = 1.25;
    s.workers[0].oom_kills = 1;
    const auto status = answer({"GET", "/status"}, s).body;
    CHECK_THAT(status, Catch::Contains("\"cpu_seconds\":1.25,") &&
                           Catch::Contains("\"memory_bytes\":52428800,") &&
                           Catch::Contains("\"oom_kills\":1,") &&
                           Catch::Contains("\"peak_memory_bytes\":62914560,"));
    const auto m = answer({"GET", "/metrics"}, s).body;
    const std::string labels = "{host=\"node1\",rank=\"4\",local_rank=\"0\"} ";
    CHECK_THAT(m, Catch::Contains("# TYPE ptrun_worker_memory_bytes gauge\n") &&
                      Catch::Contains("ptrun_worker_memory_bytes" + labels + "52428800\n"));
    CHECK_THAT(m, Catch::Contains("# TYPE ptrun_worker_peak_memory_bytes gauge\n") &&
                      Catch::Contains("ptrun_worker_peak_memory_bytes" + labels + "62914560\n"));
    CHECK_THAT(m, Catch::Contains("# TYPE ptrun_worker_cpu_seconds_total counter\n") &&
                      Catch::Contains("ptrun_worker_cpu_seconds_total" + labels + "1.25\n"));
    CHECK_THAT(m, Catch::Contains("# TYPE ptrun_worker_oom_kills_total counter\n") &&
                      Catch::Contains("ptrun_worker_oom_kills_total" + labels + "1\n"));
    // Rank 5's figures are unknown: no memory, peak or CPU sample; its OOM kills are 0.
    const std::string rank5 = "{host=\"node1\",rank=\"5\",local_rank=\"1\"}";
    CHECK_THAT(m, !Catch::Contains("ptrun_worker_memory_bytes" + rank5) &&
                      !Catch::Contains("ptrun_worker_cpu_seconds_total" + rank5) &&
                      Catch::Contains("ptrun_worker_oom_kills_total" + rank5 + " 0\n"));
    CHECK_THAT(m, Catch::Contains("# HELP ptrun_worker_memory_bytes "));
}
