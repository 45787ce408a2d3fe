// Embedding the ptrun store through its C API (ptrun/rendezvous/c_api.h), as a launcher written in
// another language would: start a server on a free port, connect two clients, use every verb,
// then stop. Exits 0 when every check passes; prints the failing check and exits 1 otherwise.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "ptrun/rendezvous/c_api.h"

namespace {

int g_failures = 0;

void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s (last error: %s)\n", what, ptrun_store_last_error());
        ++g_failures;
    }
}

std::string take(void* value, size_t len) {
    std::string s(static_cast<const char*>(value), len);
    ptrun_store_free(value);
    return s;
}

}  // namespace

int main() {
    ptrun_store_server* server = nullptr;
    expect(ptrun_store_server_start("127.0.0.1", 0, &server) == PTRUN_STORE_OK, "server start");
    if (!server) return 1;
    const uint16_t port = ptrun_store_server_port(server);
    std::printf("ptrun store %s on port %u\n", ptrun_store_version(), port);

    ptrun_store_client* a = nullptr;
    ptrun_store_client* b = nullptr;
    expect(ptrun_store_client_connect("127.0.0.1", port, PTRUN_STORE_DIALECT_MODERN, 5000, &a) ==
               PTRUN_STORE_OK,
           "connect a");
    expect(ptrun_store_client_connect("127.0.0.1", port, PTRUN_STORE_DIALECT_MODERN, 5000, &b) ==
               PTRUN_STORE_OK,
           "connect b");
    if (!a || !b) return 1;

    // set / get (allocated and caller-buffer forms)
    expect(ptrun_store_set(a, "/greeting", "hello", 5) == PTRUN_STORE_OK, "set");
    void* value = nullptr;
    size_t len = 0;
    expect(ptrun_store_get(b, "/greeting", 1000, &value, &len) == PTRUN_STORE_OK, "get");
    expect(take(value, len) == "hello", "get returns the value");
    char small[3];
    expect(ptrun_store_get_into(b, "/greeting", 1000, small, sizeof small, &len) ==
                   PTRUN_STORE_BUFFER_TOO_SMALL &&
               len == 5,
           "get_into reports the needed size");
    char big[16];
    expect(ptrun_store_get_into(b, "/greeting", 1000, big, sizeof big, &len) == PTRUN_STORE_OK &&
               std::string(big, len) == "hello",
           "get_into copies");

    // add: rank assignment
    int64_t n = 0;
    expect(ptrun_store_add(a, "/count", 5, &n) == PTRUN_STORE_OK && n == 5, "add");
    expect(ptrun_store_add(b, "/count", -2, &n) == PTRUN_STORE_OK && n == 3, "add negative");
    expect(ptrun_store_add(a, "/greeting", 1, &n) != PTRUN_STORE_OK, "add on text fails");
    // The server closed that connection (non-integer ADD); the client reconnects on the next call.

    // compare_set
    value = nullptr;
    expect(ptrun_store_compare_set(a, "/state", "", 0, "open", 4, &value, &len) == PTRUN_STORE_OK &&
               take(value, len) == "open",
           "compare_set creates");
    expect(
        ptrun_store_compare_set(b, "/state", "shut", 4, "x", 1, &value, &len) == PTRUN_STORE_OK &&
            take(value, len) == "open",
        "compare_set mismatch returns current");
    expect(
        ptrun_store_compare_set(b, "/missing", "exp", 3, "x", 1, &value, &len) == PTRUN_STORE_OK &&
            take(value, len) == "exp",
        "compare_set on a missing key");

    // wait: woken by another client's set (server-side wait, no polling)
    std::thread setter([b] { ptrun_store_set(b, "/late", "1", 1); });
    const char* keys[] = {"/greeting", "/late"};
    expect(ptrun_store_wait(a, keys, 2, 5000) == PTRUN_STORE_OK, "wait");
    setter.join();
    const char* never[] = {"/never"};
    expect(ptrun_store_wait(a, never, 1, 100) == PTRUN_STORE_TIMEOUT, "wait times out");
    expect(std::strstr(ptrun_store_last_error(), "/never") != nullptr, "timeout names the key");

    int exists = 0;
    expect(ptrun_store_check(a, keys, 2, &exists) == PTRUN_STORE_OK && exists == 1, "check");
    int deleted = 0;
    expect(ptrun_store_delete_key(a, "/late", &deleted) == PTRUN_STORE_OK && deleted == 1,
           "delete");
    int64_t count = 0;
    expect(ptrun_store_num_keys(a, &count) == PTRUN_STORE_OK && count == 3, "num_keys");

    // errors are values, never crashes
    expect(ptrun_store_set(nullptr, "/k", "v", 1) == PTRUN_STORE_INVALID_ARGUMENT, "NULL client");
    ptrun_store_client* refused = nullptr;
    expect(ptrun_store_client_connect("127.0.0.1", 1, PTRUN_STORE_DIALECT_MODERN, 200, &refused) ==
                   PTRUN_STORE_CONNECTION_LOST &&
               refused == nullptr,
           "connect to a closed port");

    ptrun_store_client_close(a);
    ptrun_store_client_close(b);
    expect(ptrun_store_server_stop(server) == PTRUN_STORE_OK, "server stop");
    if (g_failures) return 1;
    std::printf("embed.cpp: all checks passed\n");
    return 0;
}
