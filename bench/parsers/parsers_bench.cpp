// The watchdog's two hand-written parsers against the libraries at hand (issue 22): the file
// timer's flat JSON (parse_timer_request) against nlohmann::json::parse, and the health
// endpoint's request head (request_head_end + parse_request_head) against Boost.Beast's
// http::request_parser. Prints ns per call for typical and hostile inputs, and what each answers.
// Run: build/bench/parsers/bench_parsers (bench/RESULTS.md).
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "ptrun/watchdog/http_exchange.hpp"
#include "ptrun/watchdog/timer_request.hpp"

namespace {

namespace http = boost::beast::http;
using ptrun::watchdog::parse_request_head;
using ptrun::watchdog::parse_timer_request;
using ptrun::watchdog::request_head_end;

/// `iterations` calls after a warm-up of a tenth as many: ns per call.
double ns_per_call(int iterations, const std::function<bool()>& call) {
    volatile bool sink = false;
    for (int i = 0; i < iterations / 10 + 1; ++i) sink = call();  // warm up
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) sink = call();
    auto ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start);
    (void)sink;
    return ns.count() / iterations;
}

bool ours_json(const std::string& line) {
    try {
        return parse_timer_request(line).pid > 0;
    } catch (const std::exception&) {
        return false;
    }
}

bool nlohmann_json(const std::string& line) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    return j.is_object() && j.contains("pid") && j["pid"].is_number_integer();
}

bool ours_http(const std::string& bytes) {
    auto end = request_head_end(bytes);
    if (!end) return false;
    return parse_request_head(std::string_view(bytes).substr(0, *end)).request.has_value();
}

bool beast_http(const std::string& bytes) {
    http::request_parser<http::empty_body> parser;
    parser.header_limit(8192);
    parser.body_limit(0);
    boost::system::error_code ec;
    parser.put(boost::asio::buffer(bytes), ec);
    return !ec && parser.is_header_done();
}

void row(const char* what, const std::string& input, int iterations, bool (*a)(const std::string&),
         bool (*b)(const std::string&), const char* a_name, const char* b_name) {
    const double ta = ns_per_call(iterations, [&] { return a(input); });
    const double tb = ns_per_call(iterations, [&] { return b(input); });
    std::printf("%-44s %8zu B  %-9s %10.0f ns (%s)  %-9s %10.0f ns (%s)  ratio %.2f\n", what,
                input.size(), a_name, ta, a(input) ? "accepts" : "refuses", b_name, tb,
                b(input) ? "accepts" : "refuses", tb / ta);
}

}  // namespace

int main() {
    const std::string timer = R"({"version": 1, "pid": 4242, "scope_id": "train_step", )"
                              R"("expiration_time": 1764226800.123456, "signal": 9})";
    const std::string timer_inf =
        R"({"version": 1, "pid": 4242, "scope_id": "s", "expiration_time": Infinity, )"
        R"("signal": 9})";
    const std::string nested = std::string(2000, '[') + std::string(2000, ']');
    std::string long_string = R"({"version": 1, "pid": 1, "scope_id": ")";
    long_string += std::string(3900, 'x') + R"(", "expiration_time": 1.0, "signal": 9})";
    std::printf("file timer line: ptrun's flat parser vs nlohmann::json::parse\n");
    row("torch FileTimerRequest (json.dumps)", timer, 200000, ours_json, nlohmann_json, "flat",
        "nlohmann");
    row("expiration_time Infinity (json.dumps inf)", timer_inf, 200000, ours_json, nlohmann_json,
        "flat", "nlohmann");
    row("2,000-deep nesting (hostile)", nested, 20000, ours_json, nlohmann_json, "flat",
        "nlohmann");
    row("3,900-byte scope_id", long_string, 50000, ours_json, nlohmann_json, "flat", "nlohmann");

    const std::string probe =
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1:29400\r\nUser-Agent: kube-probe/1.29\r\n"
        "Accept: */*\r\nConnection: close\r\n\r\n";
    const std::string prom =
        "GET /status HTTP/1.1\r\nHost: node1:29400\r\nUser-Agent: Prometheus/2.42.0\r\nAccept: "
        "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
        "Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n";
    std::string many_headers = "GET /health HTTP/1.1\r\n";
    while (many_headers.size() < 8000) many_headers += "X-A: b\r\n";
    many_headers += "\r\n";
    const std::string bad_version = "GET /health HTTP/9.9\r\n\r\n";
    std::printf("\nhealth request head: ptrun's http_exchange vs Boost.Beast request_parser\n");
    row("kubelet probe", probe, 200000, ours_http, beast_http, "ours", "beast");
    row("Prometheus scrape", prom, 200000, ours_http, beast_http, "ours", "beast");
    row("8 KB of 8-byte headers (hostile)", many_headers, 20000, ours_http, beast_http, "ours",
        "beast");
    row("HTTP/9.9", bad_version, 200000, ours_http, beast_http, "ours", "beast");
    return 0;
}
