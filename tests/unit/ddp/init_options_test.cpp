// InitOptions' choices from and to text: Backend and ShmCopy (what command lines pass).
#include <catch2/catch.hpp>
#include <string>

#include "copy_strategy.hpp"
#include "ptrun/ddp/backend.hpp"
#include "ptrun/ddp/errors.hpp"
#include "ptrun/ddp/shm_copy.hpp"

using namespace ptrun::ddp;

TEST_CASE("every backend's name parses back to it", "[ddp]") {
    for (auto backend : {Backend::Auto, Backend::Cpu, Backend::Nccl}) {
        CHECK(parse_backend(backend_name(backend)) == backend);
    }
    CHECK(backend_name(Backend::Cpu) == "cpu");
    CHECK(backend_name(Backend::Nccl) == "nccl");
    CHECK(backend_name(Backend::Auto) == "auto");
}

TEST_CASE("an unknown backend is refused naming it and the accepted ones", "[ddp]") {
    CHECK_THROWS_AS(parse_backend("mpi"), CollectiveError);
    CHECK_THROWS_WITH(parse_backend("mpi"),
                      "init_process_group: unknown backend 'mpi' (expected cpu, nccl or auto)");
    CHECK_THROWS_WITH(parse_backend("CPU"), Catch::Contains("'CPU'"));
    CHECK_THROWS_WITH(parse_backend(""), Catch::Contains("unknown backend ''"));
}

TEST_CASE("every shm_copy's name parses back to it and fixes its strategy", "[ddp]") {
    for (auto copy : {ShmCopy::Auto, ShmCopy::Streamed, ShmCopy::Plain, ShmCopy::SingleCopy}) {
        CHECK(parse_shm_copy(shm_copy_name(copy)) == copy);
    }
    CHECK(shm_copy_name(ShmCopy::Auto) == "auto");
    CHECK(shm_copy_name(ShmCopy::Streamed) == "streamed");
    CHECK(shm_copy_name(ShmCopy::Plain) == "plain");
    CHECK(shm_copy_name(ShmCopy::SingleCopy) == "single-copy");
    CHECK_FALSE(detail::fixed_strategy(ShmCopy::Auto));
    CHECK(detail::fixed_strategy(ShmCopy::Streamed) == detail::CopyStrategy::Streamed);
    CHECK(detail::fixed_strategy(ShmCopy::Plain) == detail::CopyStrategy::Plain);
    CHECK(detail::fixed_strategy(ShmCopy::SingleCopy) == detail::CopyStrategy::SingleCopy);
}

TEST_CASE("an unknown shm_copy is refused naming it and the accepted ones", "[ddp]") {
    CHECK_THROWS_AS(parse_shm_copy("fast"), CollectiveError);
    CHECK_THROWS_WITH(parse_shm_copy("fast"),
                      "init_process_group: unknown shm_copy 'fast' (expected auto, streamed, "
                      "plain or single-copy)");
    CHECK_THROWS_WITH(parse_shm_copy("single_copy"), Catch::Contains("'single_copy'"));
}
