#include "wire.hpp"

#include <charconv>

#include "base64.hpp"

namespace ptrun::etcd::detail {
namespace {

constexpr std::size_t kMaxErrorText = 200;

std::string b64(const std::string& bytes) { return base64_encode(bytes); }

const Json* member(const Json& object, const char* name) {
    if (!object.is_object())
        throw Malformed("expected a JSON object, got " + std::string(object.type_name()));
    auto it = object.find(name);
    return it == object.end() ? nullptr : &*it;
}

std::string bytes_field(const Json& object, const char* name) {
    const Json* v = member(object, name);
    if (v == nullptr) return {};
    if (!v->is_string()) throw Malformed(std::string("field '") + name + "' is not a string");
    auto bytes = base64_decode(v->get_ref<const std::string&>());
    if (!bytes) throw Malformed(std::string("field '") + name + "' is not base64");
    return std::move(*bytes);
}

bool bool_field(const Json& object, const char* name) {
    const Json* v = member(object, name);
    if (v == nullptr) return false;
    if (!v->is_boolean()) throw Malformed(std::string("field '") + name + "' is not a boolean");
    return v->get<bool>();
}

/// An array field (absent = empty).
const Json& array_field(const Json& object, const char* name) {
    static const Json kEmpty = Json::array();
    const Json* v = member(object, name);
    if (v == nullptr) return kEmpty;
    if (!v->is_array()) throw Malformed(std::string("field '") + name + "' is not an array");
    return *v;
}

const Json& object_field(const Json& object, const char* name) {
    static const Json kEmpty = Json::object();
    const Json* v = member(object, name);
    if (v == nullptr) return kEmpty;
    if (!v->is_object()) throw Malformed(std::string("field '") + name + "' is not an object");
    return *v;
}

KeyValue decode_kv(const Json& kv) {
    KeyValue out;
    out.key = bytes_field(kv, "key");
    out.value = bytes_field(kv, "value");
    out.create_revision = int_field(kv, "create_revision");
    out.mod_revision = int_field(kv, "mod_revision");
    out.version = int_field(kv, "version");
    out.lease = int_field(kv, "lease");
    return out;
}

std::vector<KeyValue> decode_kvs(const Json& reply) {
    std::vector<KeyValue> out;
    for (const auto& kv : array_field(reply, "kvs")) out.push_back(decode_kv(kv));
    return out;
}

Json range_json(const std::string& key, const std::string& range_end, std::int64_t limit,
                bool by_creation, bool keys_only) {
    Json r = {{"key", b64(key)}};
    if (!range_end.empty()) r["range_end"] = b64(range_end);
    if (limit > 0) r["limit"] = std::to_string(limit);
    if (by_creation) {
        r["sort_order"] = "ASCEND";
        r["sort_target"] = "CREATE";
    }
    if (keys_only) r["keys_only"] = true;
    return r;
}

Json op_json(const Op& op) {
    switch (op.kind) {
        case Op::Kind::Put:
            return {{"request_put", put_request(op.key, op.value, op.lease)}};
        case Op::Kind::Delete:
            return {{"request_delete_range", delete_request(op.key, op.range_end)}};
        case Op::Kind::Range:
            return {
                {"request_range", range_json(op.key, op.range_end, op.limit, false, op.keys_only)}};
    }
    return {};
}

Json compare_json(const Compare& c) {
    static const char* const kTargets[] = {"VERSION", "CREATE", "MOD", "VALUE"};
    static const char* const kResults[] = {"EQUAL", "GREATER", "LESS", "NOT_EQUAL"};
    Json j = {{"key", b64(c.key)},
              {"target", kTargets[static_cast<int>(c.target)]},
              {"result", kResults[static_cast<int>(c.result)]}};
    switch (c.target) {
        case Compare::Target::Version:
            j["version"] = std::to_string(c.number);
            break;
        case Compare::Target::Create:
            j["create_revision"] = std::to_string(c.number);
            break;
        case Compare::Target::Mod:
            j["mod_revision"] = std::to_string(c.number);
            break;
        case Compare::Target::Value:
            j["value"] = b64(c.value);
            break;
    }
    return j;
}

std::string clip(std::string_view text) {
    std::string out(text.substr(0, kMaxErrorText));
    for (auto& c : out) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = '?';
    }
    if (text.size() > kMaxErrorText) out += "...";
    return out;
}

}  // namespace

Json range_request(const std::string& key, const std::string& range_end, std::int64_t limit,
                   bool by_creation, bool keys_only) {
    return range_json(key, range_end, limit, by_creation, keys_only);
}

Json put_request(const std::string& key, const std::string& value, std::int64_t lease) {
    Json r = {{"key", b64(key)}, {"value", b64(value)}};
    if (lease != 0) r["lease"] = std::to_string(lease);
    return r;
}

Json delete_request(const std::string& key, const std::string& range_end) {
    Json r = {{"key", b64(key)}};
    if (!range_end.empty()) r["range_end"] = b64(range_end);
    return r;
}

Json txn_request(const std::vector<Compare>& compares, const std::vector<Op>& success,
                 const std::vector<Op>& failure) {
    Json r = {{"compare", Json::array()}, {"success", Json::array()}, {"failure", Json::array()}};
    for (const auto& c : compares) r["compare"].push_back(compare_json(c));
    for (const auto& op : success) r["success"].push_back(op_json(op));
    for (const auto& op : failure) r["failure"].push_back(op_json(op));
    return r;
}

Json watch_request(const std::string& key, const std::string& range_end,
                   std::int64_t start_revision) {
    Json c = {{"key", b64(key)}};
    if (!range_end.empty()) c["range_end"] = b64(range_end);
    if (start_revision > 0) c["start_revision"] = std::to_string(start_revision);
    return {{"create_request", c}};
}

Json parse_json(std::string_view text) {
    Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw Malformed("not JSON: '" + clip(text) + "'");
    if (!j.is_object()) throw Malformed("not a JSON object: '" + clip(text) + "'");
    return j;
}

std::int64_t int_field(const Json& object, const char* name) {
    const Json* v = member(object, name);
    if (v == nullptr) return 0;
    if (v->is_number_integer()) return v->get<std::int64_t>();
    if (!v->is_string()) throw Malformed(std::string("field '") + name + "' is not an integer");
    const auto& s = v->get_ref<const std::string&>();
    std::int64_t out = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) {
        throw Malformed(std::string("field '") + name + "' is not a decimal int64: '" + clip(s) +
                        "'");
    }
    return out;
}

std::int64_t header_revision(const Json& reply) {
    return int_field(object_field(reply, "header"), "revision");
}

RangeResult decode_range(const Json& reply) {
    RangeResult out;
    out.revision = header_revision(reply);
    out.kvs = decode_kvs(reply);
    out.count = int_field(reply, "count");
    return out;
}

std::int64_t decode_deleted(const Json& reply) {
    header_revision(reply);  // checks the shape
    return int_field(reply, "deleted");
}

TxnResult decode_txn(const Json& reply) {
    TxnResult out;
    out.revision = header_revision(reply);
    out.succeeded = bool_field(reply, "succeeded");
    for (const auto& r : array_field(reply, "responses")) {
        if (!r.is_object()) throw Malformed("a txn response is not an object");
        if (r.contains("response_range")) out.ranges.push_back(decode_kvs(r["response_range"]));
    }
    return out;
}

WatchMessage decode_watch(const Json& message) {
    if (is_error_message(message))
        throw Malformed("watch stream error: " + decode_error(message).message);
    const Json& r = object_field(message, "result");
    if (!message.contains("result")) throw Malformed("watch message without 'result'");
    WatchMessage out;
    if (const Json* header = member(r, "header"); header != nullptr && header->is_object()) {
        out.revision = int_field(*header, "revision");
    }
    out.created = bool_field(r, "created");
    out.canceled = bool_field(r, "canceled");
    out.compact_revision = int_field(r, "compact_revision");
    if (const Json* reason = member(r, "cancel_reason"); reason != nullptr && reason->is_string()) {
        out.cancel_reason = clip(reason->get_ref<const std::string&>());
    }
    for (const auto& e : array_field(r, "events")) {
        if (!e.is_object()) throw Malformed("a watch event is not an object");
        WatchEvent event;
        if (const Json* type = member(e, "type"); type != nullptr) {
            if (*type == "DELETE") {
                event.type = WatchEvent::Type::Delete;
            } else if (*type != "PUT") {
                throw Malformed("watch event of unknown type " + clip(type->dump()));
            }
        }
        event.kv = decode_kv(object_field(e, "kv"));
        out.events.push_back(std::move(event));
    }
    return out;
}

bool is_error_message(const Json& message) {
    return message.is_object() && message.contains("error");
}

GatewayError decode_error(const Json& message) {
    GatewayError out;
    const auto it = message.find("error");
    if (it == message.end()) return out;
    const Json& e = *it;
    auto text = [](const Json& j, const char* name) -> std::string {
        auto f = j.find(name);
        return f != j.end() && f->is_string() ? clip(f->get_ref<const std::string&>()) : "";
    };
    auto code = [](const Json& j, const char* name) {
        auto f = j.find(name);
        return f != j.end() && f->is_number_integer() ? f->get<int>() : 0;
    };
    if (e.is_object()) {
        out.message = text(e, "message");
        out.code = code(e, "grpc_code");
    } else {
        out.message = text(message, "message");
        if (out.message.empty()) out.message = text(message, "error");
        out.code = code(message, "code");
    }
    return out;
}

GatewayError decode_error_body(std::string_view body) {
    const Json j = Json::parse(body.begin(), body.end(), nullptr, false);
    GatewayError out;
    if (j.is_object()) out = decode_error(j);
    if (out.message.empty()) out.message = "'" + clip(body) + "'";
    return out;
}

}  // namespace ptrun::etcd::detail
