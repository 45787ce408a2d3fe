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
    for (auto backend : {RdzvBackend::Static, RdzvBackend::C10d, RdzvBackend::Etcd}) {
        CHECK(parse_rdzv_backend(given(std::string(backend_name(backend)))) == backend);
    }
    CHECK(backend_name(RdzvBackend::Static) == "static");
    CHECK(backend_name(RdzvBackend::C10d) == "c10d");
    CHECK(backend_name(RdzvBackend::Etcd) == "etcd-v2");
}

TEST_CASE("rdzv backend: etcd, torchrun's older name, is etcd-v2", "[launcher][config][etcd]") {
    CHECK(parse_rdzv_backend(given("etcd")) == RdzvBackend::Etcd);
    CHECK(parse_rdzv_backend(given("etcd-v2", Source::PetEnv)) == RdzvBackend::Etcd);
}

TEST_CASE("rdzv backend: others are refused naming the value and the accepted ones",
          "[launcher][config]") {
    CHECK_THROWS_WITH(parse_rdzv_backend(given("C10D")),
                      "--rdzv-backend 'C10D': expected static, c10d or etcd-v2 (or etcd, its "
                      "older name)");
    CHECK_THROWS_WITH(parse_rdzv_backend(given("etcd-v3")), Catch::Contains("'etcd-v3'"));
    CHECK_THROWS_WITH(parse_rdzv_backend(given("zmq", Source::PetEnv)),
                      Catch::StartsWith("--rdzv-backend 'zmq' (from PET_ environment): expected "
                                        "static, c10d or etcd-v2"));
}
