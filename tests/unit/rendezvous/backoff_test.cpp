#include "ptrun/rendezvous/backoff.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>

using namespace ptrun::rdzv;
using std::chrono::milliseconds;

TEST_CASE("Backoff without jitter doubles up to the cap and resets", "[rdzv][backoff]") {
    Backoff b({milliseconds(10), milliseconds(50), 2.0, 0.0, 1});
    CHECK(b.next() == milliseconds(10));
    CHECK(b.next() == milliseconds(20));
    CHECK(b.next() == milliseconds(40));
    CHECK(b.next() == milliseconds(50));
    CHECK(b.next() == milliseconds(50));
    b.reset();
    CHECK(b.next() == milliseconds(10));
}

TEST_CASE("Backoff jitter stays within its band and the cap", "[rdzv][backoff]") {
    Backoff b({milliseconds(100), milliseconds(400), 2.0, 0.5, 42});
    double base = 100;
    for (int i = 0; i < 50; ++i) {
        const auto d = b.next().count();
        CHECK(d >= static_cast<long>(base * 0.5) - 1);
        CHECK(d <= std::min(400L, static_cast<long>(base * 1.5)));
        base = std::min(base * 2, 400.0);
    }
}

TEST_CASE("Backoff rejects nonsense options", "[rdzv][backoff]") {
    CHECK_THROWS_AS(Backoff({milliseconds(1), milliseconds(2), 0.5, 0.1, 0}),
                    std::invalid_argument);
    CHECK_THROWS_AS(Backoff({milliseconds(1), milliseconds(2), 2.0, 1.5, 0}),
                    std::invalid_argument);
    CHECK_THROWS_AS(Backoff({milliseconds(-1), milliseconds(2), 2.0, 0.1, 0}),
                    std::invalid_argument);
}
