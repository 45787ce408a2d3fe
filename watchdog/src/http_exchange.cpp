#include "ptrun/watchdog/http_exchange.hpp"

#include <fmt/format.h>

namespace ptrun::watchdog {
namespace {

const char* reason_phrase(int status) {
    switch (status) {
        case 200:
            return "OK";
        case 400:
            return "Bad Request";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 431:
            return "Request Header Fields Too Large";
        case 500:
            return "Internal Server Error";
        case 503:
            return "Service Unavailable";
        case 505:
            return "HTTP Version Not Supported";
        default:
            return "Unknown";
    }
}

bool token_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '!' || c == '~' || c == '*' || c == '\'' || c == '+' ||
           c == '#' || c == '$' || c == '%' || c == '&' || c == '^' || c == '`' || c == '|';
}

}  // namespace

std::optional<std::size_t> request_head_end(std::string_view received) {
    const auto crlf = received.find("\r\n\r\n");
    const auto lf = received.find("\n\n");
    if (crlf == std::string_view::npos && lf == std::string_view::npos) return std::nullopt;
    if (crlf != std::string_view::npos && (lf == std::string_view::npos || crlf < lf)) {
        return crlf + 4;
    }
    return lf + 2;
}

HttpResponse text_response(int status, std::string body) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body) + "\n";
    return r;
}

ParsedRequest parse_request_head(std::string_view head) {
    ParsedRequest out;
    const auto eol = head.find('\n');
    std::string_view line = head.substr(0, eol);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // METHOD SP TARGET SP HTTP/1.x
    const auto sp1 = line.find(' ');
    const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos || sp1 == 0 ||
        sp2 == sp1 + 1 || line.find(' ', sp2 + 1) != std::string_view::npos) {
        out.error = text_response(400, "malformed request line");
        return out;
    }
    const std::string_view method = line.substr(0, sp1);
    const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string_view version = line.substr(sp2 + 1);
    for (char c : method) {
        if (!token_char(c)) {
            out.error = text_response(400, "malformed method");
            return out;
        }
    }
    if (version.substr(0, 5) != "HTTP/") {
        out.error = text_response(400, "malformed request line");
        return out;
    }
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
        out.error = text_response(505, "only HTTP/1.0 and HTTP/1.1");
        return out;
    }
    if (target.empty() || target.front() != '/') {
        out.error = text_response(400, "the target must be a path");
        return out;
    }
    for (char c : target) {
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
            out.error = text_response(400, "malformed target");
            return out;
        }
    }
    const auto query = target.find_first_of("?#");
    out.request = HttpRequest{std::string(method), std::string(target.substr(0, query))};
    if (query != std::string_view::npos && target[query] == '?') {
        const auto rest = target.substr(query + 1);
        out.query = std::string(rest.substr(0, rest.find('#')));
    }
    return out;
}

HttpResponse answer(const HttpRequest& request, const StatusSnapshot& snapshot) {
    const bool head = request.method == "HEAD";
    if (request.path != "/health" && request.path != "/status" && request.path != "/metrics") {
        auto r = text_response(404, "not found: try /health, /status, /metrics or /stacks");
        r.head_only = head;
        return r;
    }
    if (request.method != "GET" && !head) {
        return text_response(405, "only GET and HEAD");
    }
    HttpResponse r;
    if (request.path == "/health") {
        const Health h = health_of(snapshot);
        r = text_response(h.ok ? 200 : 503, h.reason);
    } else if (request.path == "/metrics") {
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        r.body = metrics_text(snapshot);
    } else {
        r.content_type = "application/json";
        r.body = status_json(snapshot) + "\n";
    }
    r.head_only = head;
    return r;
}

std::string serialize(const HttpResponse& r) {
    std::string out = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n"
        "Cache-Control: no-store\r\n",
        r.status, reason_phrase(r.status), r.content_type, r.body.size());
    if (r.status == 405) out += "Allow: GET, HEAD\r\n";
    out += "\r\n";
    if (!r.head_only) out += r.body;
    return out;
}

}  // namespace ptrun::watchdog
