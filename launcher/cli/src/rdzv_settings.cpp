#include "ptrun/launcher/cli/rdzv_settings.hpp"

#include <cctype>
#include <cstdlib>

#include "ptrun/env/env_map.hpp"
#include "ptrun/launcher/cli/etcd_settings.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {
namespace {

constexpr const char* kKnownKeys =
    "join_timeout, last_call_timeout, close_timeout, read_timeout, heartbeat, keep_alive_interval, "
    "keep_alive_max_attempt, is_host, use_agent_store, use_libuv, store_type, timeout, key_file; "
    "with etcd-v2: "
    "protocol, "
    "cacert, ca_cert, cert, ssl_cert, key, ssl_cert_key";

std::string item(const std::string& key, const std::string& value) {
    return "--rdzv-conf " + key + "=" + value;
}

Millis seconds(const std::string& key, const std::string& value) {
    auto v = env::parse_seconds(value);
    if (!v || *v == 0)
        throw UsageError(item(key, value) + ": expected a positive number of seconds");
    // Rounded to the nearest millisecond (*v is within [0, 1e7]); no llround: ptrun links no libm.
    return Millis(static_cast<Millis::rep>(*v * 1000.0 + 0.5));
}

bool boolean(const std::string& key, const std::string& value) {
    if (auto b = env::parse_bool(value)) return *b;
    throw UsageError(item(key, value) + ": expected true or false");
}

/// torchrun's store_type: tcp or file, any case, around spaces.
bool store_type_is_file(const std::string& value) {
    std::string v;
    for (char ch : value) {
        if (ch != ' ') v.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    }
    if (v == "tcp") return false;
    if (v == "file") return true;
    throw UsageError(item("store_type", value) + ": expected tcp or file");
}

}  // namespace

RdzvSettings rdzv_settings(const RdzvConf& conf) {
    RdzvSettings s;
    for (const auto& [key, value] : conf) {
        if (key == "join_timeout" || key == "timeout") {
            s.join_timeout = seconds(key, value);
        } else if (key == "last_call_timeout") {
            s.last_call_timeout = seconds(key, value);
        } else if (key == "close_timeout") {
            s.close_timeout = seconds(key, value);
        } else if (key == "read_timeout") {
            s.read_timeout = seconds(key, value);
        } else if (key == "heartbeat" || key == "keep_alive_interval") {
            s.heartbeat = seconds(key, value);
        } else if (key == "keep_alive_max_attempt") {
            char* end = nullptr;
            long v = std::strtol(value.c_str(), &end, 10);
            if (value.empty() || *end != '\0' || v < 1 || v > 1000) {
                throw UsageError(item(key, value) + ": expected an integer from 1 to 1000");
            }
            s.keep_alive_max_attempt = static_cast<int>(v);
        } else if (key == "key_file") {
            if (value.empty()) {
                throw UsageError(item(key, value) + ": expected the path of a key file");
            }
            s.key_file = value;
        } else if (key == "is_host") {
            s.is_host = boolean(key, value);
        } else if (key == "use_agent_store") {
            if (!boolean(key, value)) {
                throw UsageError(item(key, value) +
                                 ": ptrun always hosts the workers' store in its agent "
                                 "(expected true)");
            }
        } else if (key == "use_libuv") {
            s.use_libuv = boolean(key, value);
        } else if (key == "store_type") {
            s.file_store = store_type_is_file(value);
        } else if (is_etcd_conf_key(key)) {
            // etcd_settings reads them; resolve refuses them with the other backends.
        } else {
            throw UsageError("--rdzv-conf key '" + key + "': unknown; expected one of " +
                             kKnownKeys);
        }
    }
    return s;
}

}  // namespace ptrun::launcher
