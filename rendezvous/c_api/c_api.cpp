// The C API over TcpStoreServer and TcpStoreClient: every entry point catches everything and
// turns it into a status code plus this thread's last-error message.
#include "ptrun/rendezvous/c_api.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/tcp_store_client.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

struct ptrun_store_server {
    ptrun::rdzv::TcpStoreServer server;
};
struct ptrun_store_client {
    ptrun::rdzv::TcpStoreClient client;
};

namespace {

using ptrun::rdzv::Duration;

thread_local std::string t_last_error;

int fail(int status, std::string message) {
    t_last_error = std::move(message);
    return status;
}

/// Runs `body`, mapping each exception family to its status code.
template <typename Body>
int guarded(Body&& body) noexcept {
    try {
        t_last_error.clear();
        body();
        return PTRUN_STORE_OK;
    } catch (const ptrun::rdzv::StoreTimeout& e) {
        return fail(PTRUN_STORE_TIMEOUT, e.what());
    } catch (const ptrun::rdzv::ConnectionLost& e) {
        return fail(PTRUN_STORE_CONNECTION_LOST, e.what());
    } catch (const std::bad_alloc&) {
        return fail(PTRUN_STORE_ERROR, "out of memory");
    } catch (const std::exception& e) {
        return fail(PTRUN_STORE_ERROR, e.what());
    } catch (...) {
        return fail(PTRUN_STORE_ERROR, "unknown error");
    }
}

Duration timeout_of(std::int64_t ms) {
    return ms < 0 ? ptrun::rdzv::kDefaultTimeout : Duration(ms);
}

/// A malloc'ed, NUL-terminated copy of `value` (ptrun_store_free releases it).
void* copy_out(const std::string& value) {
    auto* p = static_cast<char*>(std::malloc(value.size() + 1));
    if (!p) throw std::bad_alloc();
    std::memcpy(p, value.data(), value.size());
    p[value.size()] = '\0';
    return p;
}

std::vector<std::string> key_list(const char* const* keys, size_t n) {
    std::vector<std::string> list;
    list.reserve(n);
    for (size_t i = 0; i < n; ++i) list.emplace_back(keys[i]);
    return list;
}

std::string_view bytes_of(const void* p, size_t n) {
    return n == 0 ? std::string_view() : std::string_view(static_cast<const char*>(p), n);
}

int invalid(const char* what) {
    return fail(PTRUN_STORE_INVALID_ARGUMENT, std::string("invalid argument: ") + what);
}

}  // namespace

extern "C" {

const char* ptrun_store_version(void) { return PTRUN_VERSION; }
const char* ptrun_store_last_error(void) { return t_last_error.c_str(); }
void ptrun_store_free(void* p) { std::free(p); }

int ptrun_store_server_start(const char* host, uint16_t port, ptrun_store_server** out) {
    if (!out) return invalid("out is NULL");
    *out = nullptr;
    return guarded([&] {
        ptrun::rdzv::TcpStoreServerOptions options;
        if (host) options.host = host;
        options.port = port;
        *out = new ptrun_store_server{ptrun::rdzv::TcpStoreServer(std::move(options))};
    });
}

uint16_t ptrun_store_server_port(const ptrun_store_server* server) {
    return server ? server->server.port() : 0;
}

int ptrun_store_server_stop(ptrun_store_server* server) {
    if (!server) return PTRUN_STORE_OK;
    std::unique_ptr<ptrun_store_server> owned(server);
    return guarded([&] { owned->server.stop(); });
}

int ptrun_store_client_connect(const char* host, uint16_t port, ptrun_store_dialect dialect,
                               int64_t timeout_ms, ptrun_store_client** out) {
    if (!out) return invalid("out is NULL");
    if (!host) return invalid("host is NULL");
    *out = nullptr;
    return guarded([&] {
        ptrun::rdzv::TcpStoreClientOptions options;
        options.host = host;
        options.port = port;
        options.dialect = dialect == PTRUN_STORE_DIALECT_LEGACY ? ptrun::rdzv::Dialect::Legacy
                                                                : ptrun::rdzv::Dialect::Modern;
        options.connect_timeout = timeout_of(timeout_ms);
        options.io_timeout = timeout_of(timeout_ms);
        *out = new ptrun_store_client{ptrun::rdzv::TcpStoreClient(std::move(options))};
    });
}

void ptrun_store_client_close(ptrun_store_client* client) { delete client; }

int ptrun_store_set(ptrun_store_client* client, const char* key, const void* value,
                    size_t value_len) {
    if (!client || !key || (!value && value_len)) return invalid("NULL client, key or value");
    return guarded([&] { client->client.set(key, bytes_of(value, value_len)); });
}

int ptrun_store_get(ptrun_store_client* client, const char* key, int64_t timeout_ms, void** value,
                    size_t* value_len) {
    if (!client || !key || !value) return invalid("NULL client, key or value");
    *value = nullptr;
    return guarded([&] {
        const std::string got = client->client.get(key, timeout_of(timeout_ms));
        *value = copy_out(got);
        if (value_len) *value_len = got.size();
    });
}

int ptrun_store_get_into(ptrun_store_client* client, const char* key, int64_t timeout_ms,
                         void* buffer, size_t capacity, size_t* value_len) {
    if (!client || !key || !value_len || (!buffer && capacity)) {
        return invalid("NULL client, key, buffer or value_len");
    }
    std::string got;
    const int status = guarded([&] { got = client->client.get(key, timeout_of(timeout_ms)); });
    if (status != PTRUN_STORE_OK) return status;
    *value_len = got.size();
    if (got.size() > capacity) {
        return fail(PTRUN_STORE_BUFFER_TOO_SMALL,
                    "value of '" + std::string(key) + "' has " + std::to_string(got.size()) +
                        " bytes; buffer holds " + std::to_string(capacity));
    }
    if (!got.empty()) std::memcpy(buffer, got.data(), got.size());
    return PTRUN_STORE_OK;
}

int ptrun_store_add(ptrun_store_client* client, const char* key, int64_t delta, int64_t* result) {
    if (!client || !key) return invalid("NULL client or key");
    return guarded([&] {
        const std::int64_t now = client->client.add(key, delta);
        if (result) *result = now;
    });
}

int ptrun_store_compare_set(ptrun_store_client* client, const char* key, const void* expected,
                            size_t expected_len, const void* desired, size_t desired_len,
                            void** current, size_t* current_len) {
    if (!client || !key || (!expected && expected_len) || (!desired && desired_len)) {
        return invalid("NULL client, key, expected or desired");
    }
    if (current) *current = nullptr;
    return guarded([&] {
        const std::string now = client->client.compare_set(key, bytes_of(expected, expected_len),
                                                           bytes_of(desired, desired_len));
        if (current) *current = copy_out(now);
        if (current_len) *current_len = now.size();
    });
}

int ptrun_store_wait(ptrun_store_client* client, const char* const* keys, size_t n,
                     int64_t timeout_ms) {
    if (!client || (!keys && n)) return invalid("NULL client or keys");
    return guarded([&] { client->client.wait(key_list(keys, n), timeout_of(timeout_ms)); });
}

int ptrun_store_check(ptrun_store_client* client, const char* const* keys, size_t n, int* exists) {
    if (!client || (!keys && n) || !exists) return invalid("NULL client, keys or exists");
    return guarded([&] { *exists = client->client.check(key_list(keys, n)) ? 1 : 0; });
}

int ptrun_store_delete_key(ptrun_store_client* client, const char* key, int* deleted) {
    if (!client || !key) return invalid("NULL client or key");
    return guarded([&] {
        const bool existed = client->client.delete_key(key);
        if (deleted) *deleted = existed ? 1 : 0;
    });
}

int ptrun_store_num_keys(ptrun_store_client* client, int64_t* count) {
    if (!client || !count) return invalid("NULL client or count");
    return guarded([&] { *count = client->client.num_keys(); });
}

}  // extern "C"
