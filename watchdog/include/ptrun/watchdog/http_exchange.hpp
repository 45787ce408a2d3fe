#pragma once
/// The HTTP/1.1 the health endpoint speaks, as pure functions: find the end of a request head in
/// the bytes received so far, parse it, and answer it. One request per connection, then close.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "ptrun/watchdog/health_status.hpp"

namespace ptrun::watchdog {

struct HttpRequest {
    std::string method;  ///< "GET", "HEAD", ...
    std::string path;    ///< the target without its query string
    bool operator==(const HttpRequest&) const = default;
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
    bool head_only = false;  ///< HEAD: headers (with the body's length) and no body
};

/// Where the request head ends (just past its blank line: "\r\n\r\n" or "\n\n"), or nullopt when
/// `received` does not hold a whole head yet.
std::optional<std::size_t> request_head_end(std::string_view received);

/// Parses a request head; a malformed one yields a 400/505 response instead (as the error).
struct ParsedRequest {
    std::optional<HttpRequest> request;
    HttpResponse error;  ///< meaningful when !request
    std::string query;   ///< what follows '?' in the target, without a '#' fragment
};
ParsedRequest parse_request_head(std::string_view head);

/// The answer to `request` given the agent's snapshot: /health, /status, 404, 405.
HttpResponse answer(const HttpRequest& request, const StatusSnapshot& snapshot);

/// A response with `status` and a one-line text body.
HttpResponse text_response(int status, std::string body);

/// The bytes on the wire (Content-Length, Connection: close, Cache-Control: no-store).
std::string serialize(const HttpResponse& response);

}  // namespace ptrun::watchdog
