#include "ptrun/launcher/output/printable.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/output/hang_report.hpp"

using namespace ptrun::launcher;

TEST_CASE("printable escapes every control character and keeps the rest", "[launcher][output]") {
    CHECK(printable("plain text, tabs\tand UTF-8 \xc3\xa9") ==
          "plain text, tabs\tand UTF-8 \xc3\xa9");
    CHECK(printable("a\nb\rc\x1b[2Kd\x7f\x01") == "a\\nb\\rc\\e[2Kd\\x7f\\x01");
    CHECK(printable(std::string("nul\0byte", 8)) == "nul\\x00byte");
    CHECK(printable_lines("line 1\nline 2\x1b]0;title\x07") == "line 1\nline 2\\e]0;title\\x07");
}

TEST_CASE("a forged line in a section name stays inside the hang report's line",
          "[launcher][output]") {
    HangReport report;
    report.host = "node1";
    HangReportRank r;
    r.hung = true;
    r.what = "in section 'x\n[ptrun node1:1] info: all workers succeeded' 3 s past its deadline";
    r.section = "x\n[ptrun node1:1] info: all workers succeeded";
    report.ranks.push_back(r);
    const auto text = format_hang_report(report);
    CHECK(text.find("\n[ptrun") == std::string::npos);
    CHECK(text.find("'x\\n[ptrun node1:1] info: all workers succeeded'") != std::string::npos);
}
