#include "ptrun/placement/binding_report.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::placement;

TEST_CASE("report-bindings lines say where each worker runs", "[placement][report]") {
    WorkerPlacement w{"dgx01", 13, 5, parse_id_list("70-83,182-195"), true, IdSet({1}), "5"};
    CHECK(binding_report_line(w) ==
          "[dgx01] rank 13 (local 5): cpus 70-83,182-195 bound, memory preferred on node 1, "
          "gpus 5");
    w.mems = IdSet({0, 1});
    w.gpus = "GPU-aa,GPU-bb";
    CHECK(binding_report_line(w) ==
          "[dgx01] rank 13 (local 5): cpus 70-83,182-195 bound, memory preferred on nodes 0-1, "
          "gpus GPU-aa,GPU-bb");
    WorkerPlacement plain{"vm", 0, 0, IdSet({0, 1}), false, IdSet(), ""};
    CHECK(binding_report_line(plain) ==
          "[vm] rank 0 (local 0): cpus 0-1 inherited, memory default, gpus none");
}
