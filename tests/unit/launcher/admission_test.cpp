#include "ptrun/launcher/membership/admission.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

using namespace ptrun::launcher;
using Catch::Matchers::Contains;

namespace {

const NodePlacement kPlaced{3, 1, 1, 2, 4, 8, "fd77::10", 29500, "0123abcd", {}};

/// The message decode_admission throws for `text`; fails the test when it accepts the text.
std::string rejection(const std::string& text) {
    try {
        decode_admission(text);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    FAIL("accepted: " << text);
    return {};
}

}  // namespace

TEST_CASE("admission: a placement survives the trip through the store", "[launcher][round]") {
    const Admission a = kPlaced;
    CHECK(decode_admission(encode(a)) == a);
}

TEST_CASE("admission: a refusal keeps its message byte for byte", "[launcher][round]") {
    const std::string message =
        "node \"b\" said:\n\tmax 2 nodes \\ already {\"joined\"}\r\n\x01 ok";
    const Admission a = AdmissionRefused{message};
    const auto decoded = decode_admission(encode(a));
    REQUIRE(std::holds_alternative<AdmissionRefused>(decoded));
    CHECK(std::get<AdmissionRefused>(decoded).message == message);
    CHECK(decode_admission(encode(Admission{AdmissionRefused{""}})) ==
          Admission{AdmissionRefused{}});
}

TEST_CASE("admission: the old error sentinel and text that is not JSON are rejected",
          "[launcher][round]") {
    CHECK_THAT(rejection("error:too many nodes"), Contains("malformed admission: not JSON"));
    CHECK_THAT(rejection(""), Contains("not JSON"));
    CHECK_THAT(rejection(R"({"refused": "x")"), Contains("not JSON"));
    CHECK_THAT(rejection("[1, 2]"), Contains("expected a JSON object, got array"));
    CHECK_THAT(rejection(R"("refused")"), Contains("expected a JSON object, got string"));
}

TEST_CASE("admission: exactly one alternative must be present", "[launcher][round]") {
    const std::string placement = encode(kPlaced);
    CHECK_THAT(rejection(R"({"refused": "no", "placement": )" + placement + "}"),
               Contains("both 'placement' and 'refused' are present"));
    CHECK_THAT(rejection("{}"), Contains("neither 'placement' nor 'refused' is present"));
    CHECK_THAT(rejection(R"({"error": "no"})"), Contains("neither"));
    // A bare placement (the old wire format) is not an admission.
    CHECK_THAT(rejection(placement), Contains("neither"));
}

TEST_CASE("admission: alternatives of the wrong type are rejected", "[launcher][round]") {
    CHECK_THAT(rejection(R"({"refused": 7})"), Contains("'refused' is number, expected a string"));
    CHECK_THAT(rejection(R"({"refused": null})"), Contains("'refused' is null"));
    CHECK_THAT(rejection(R"({"refused": ["no"]})"), Contains("'refused' is array"));
    CHECK_THAT(rejection(R"({"placement": "x"})"),
               Contains("'placement' is string, expected an object"));
    CHECK_THAT(rejection(R"({"placement": {"round": 1}})"),
               Contains("admission: malformed placement record"));
    CHECK_THAT(rejection(R"({"placement": {"round": "1"}})"), Contains("malformed placement"));
    auto out_of_range = kPlaced;
    out_of_range.group_rank = 2;
    CHECK_THAT(rejection(encode(Admission{out_of_range})), Contains("out of range"));
}
