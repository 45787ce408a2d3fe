#pragma once
/// The gateway's JSON: requests built from the client's types, replies decoded into them. etcd
/// writes int64s as JSON strings, bytes as base64, and omits every field equal to its zero value.
/// Replies are hostile input: anything unexpected throws Malformed, never crashes.

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ptrun/etcd/client.hpp"

namespace ptrun::etcd::detail {

using Json = nlohmann::json;

/// A reply the gateway would not send: bad JSON, bad base64, a field of the wrong type.
class Malformed : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

Json range_request(const std::string& key, const std::string& range_end, std::int64_t limit,
                   bool by_creation, bool keys_only = false);
Json put_request(const std::string& key, const std::string& value, std::int64_t lease);
Json delete_request(const std::string& key, const std::string& range_end);
Json txn_request(const std::vector<Compare>& compares, const std::vector<Op>& success,
                 const std::vector<Op>& failure);
Json watch_request(const std::string& key, const std::string& range_end,
                   std::int64_t start_revision);

/// `text` as JSON; throws Malformed naming what is wrong.
Json parse_json(std::string_view text);
/// The int64 field `name` of `object` (a JSON string or number; absent = 0); throws Malformed.
std::int64_t int_field(const Json& object, const char* name);
/// The revision in a reply's header.
std::int64_t header_revision(const Json& reply);

RangeResult decode_range(const Json& reply);
/// kv/deleterange's "deleted".
std::int64_t decode_deleted(const Json& reply);
TxnResult decode_txn(const Json& reply);

/// One message of a watch stream.
struct WatchMessage {
    std::int64_t revision = 0;  ///< the store's revision when etcd sent it (its header)
    bool created = false;
    bool canceled = false;
    std::int64_t compact_revision = 0;
    std::string cancel_reason;
    std::vector<WatchEvent> events;
};
/// A stream message's {"result": {...}}; an {"error": ...} message throws Malformed.
WatchMessage decode_watch(const Json& message);

/// What a refused request said: {"error": "...", "code": N, "message": "..."} from unary calls,
/// {"error": {"grpc_code": N, "message": "..."}} from streams.
struct GatewayError {
    int code = 0;         ///< the gRPC status code (0: none given)
    std::string message;  ///< "" when the body is not an error object
};
/// Never throws: a body that is no error object gives its first bytes as the message.
GatewayError decode_error_body(std::string_view body);
/// The error object of a parsed stream message, if it is one.
bool is_error_message(const Json& message);
GatewayError decode_error(const Json& message);

}  // namespace ptrun::etcd::detail
