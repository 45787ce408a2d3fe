#include "ptrun/launcher/cli/rdzv_backend.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;

namespace {

RawValue given(std::string value, Source source = Source::Flag) {
    return {std::move(value), source, {}};
}

}  // namespace

TEST_CASE("rdzv backend: torchrun's names round trip", "[launcher][config]") {
    for (auto backend : {RdzvBackend::Static, RdzvBackend::C10d}) {
        CHECK(parse_rdzv_backend(given(std::string(backend_name(backend)))) == backend);
    }
    CHECK(backend_name(RdzvBackend::Static) == "static");
    CHECK(backend_name(RdzvBackend::C10d) == "c10d");
}

TEST_CASE("rdzv backend: others are refused naming the value and the accepted ones",
          "[launcher][config]") {
    CHECK_THROWS_AS(parse_rdzv_backend(given("etcd")), NotSupportedError);
    CHECK_THROWS_WITH(
        parse_rdzv_backend(given("etcd-v2")),
        Catch::Contains("--rdzv-backend 'etcd-v2'") && Catch::Contains("use c10d or static"));
    CHECK_THROWS_WITH(parse_rdzv_backend(given("C10D")),
                      "--rdzv-backend 'C10D': expected c10d or static");
    CHECK_THROWS_WITH(parse_rdzv_backend(given("zmq", Source::PetEnv)),
                      "--rdzv-backend 'zmq' (from PET_ environment): expected c10d or static");
}
