#include "base64.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace ptrun::etcd::detail;

TEST_CASE("etcd base64 round-trips every length and byte", "[etcd][base64]") {
    CHECK(base64_encode("") == "");
    CHECK(base64_encode("f") == "Zg==");
    CHECK(base64_encode("fo") == "Zm8=");
    CHECK(base64_encode("foo") == "Zm9v");
    CHECK(base64_encode("foob") == "Zm9vYg==");
    std::string all;
    for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
    for (std::size_t n = 0; n <= all.size(); n += 7) {
        const auto part = all.substr(0, n);
        CHECK(base64_decode(base64_encode(part)) == part);
    }
}

TEST_CASE("etcd base64 rejects what is not padded base64", "[etcd][base64]") {
    CHECK_FALSE(base64_decode("Zg="));       // bad length
    CHECK_FALSE(base64_decode("Z==="));      // too much padding
    CHECK_FALSE(base64_decode("Zm9v!A=="));  // bad character
    CHECK_FALSE(base64_decode("Zg==Zg=="));  // padding before the end
    CHECK(base64_decode("Zh==") == "f");     // unused bits ignored, as Go writes none
}
