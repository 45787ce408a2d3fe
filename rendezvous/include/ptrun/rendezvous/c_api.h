/* ptrun store C API: embed the TCPStore-compatible server and client from C, Python (ctypes), Go,
 * Rust... Library: libptrun_store_c.so. Exceptions never cross this boundary.
 *
 * Conventions:
 *  - Every function returning int returns a ptrun_store_status: 0 (PTRUN_STORE_OK) or an error.
 *    After an error, ptrun_store_last_error() describes it (names the keys and the time waited).
 *  - Handles are opaque and may be shared between threads: a client serialises its calls (a
 *    blocked wait holds up the other calls on that client; use one client per waiting thread).
 *  - Keys are NUL-terminated strings and go on the wire as given: torch's TCPStore adds a leading
 *    "/" to the keys it exposes, so torch's key "k" is "/k" here. Values are (pointer, length).
 *  - Timeouts are milliseconds; a negative timeout means the library default (300 s).
 *  - Values returned through `void** out` are allocated by the library: free them with
 *    ptrun_store_free(). */
#ifndef PTRUN_RENDEZVOUS_C_API_H
#define PTRUN_RENDEZVOUS_C_API_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define PTRUN_STORE_API __attribute__((visibility("default")))
#else
#define PTRUN_STORE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptrun_store_server ptrun_store_server;
typedef struct ptrun_store_client ptrun_store_client;

typedef enum ptrun_store_status {
    PTRUN_STORE_OK = 0,
    PTRUN_STORE_ERROR = 1,            /* rejected request, bad reply, cannot listen, ... */
    PTRUN_STORE_TIMEOUT = 2,          /* a blocking call ran out of time */
    PTRUN_STORE_CONNECTION_LOST = 3,  /* cannot connect, or the connection broke */
    PTRUN_STORE_INVALID_ARGUMENT = 4, /* a NULL handle or pointer where one is required */
    PTRUN_STORE_BUFFER_TOO_SMALL = 5  /* ptrun_store_get_into: *value_len says what is needed */
} ptrun_store_status;

typedef enum ptrun_store_dialect {
    PTRUN_STORE_DIALECT_MODERN = 0, /* PyTorch 2.2+ wire (VALIDATE + PING); any ptrun server */
    PTRUN_STORE_DIALECT_LEGACY = 1  /* PyTorch 1.13/2.0 wire, e.g. torch 1.13's own server */
} ptrun_store_dialect;

/** The library version, e.g. "0.1.0". Static storage. */
PTRUN_STORE_API const char* ptrun_store_version(void);
/** The message of this thread's last failed call ("" if none). Valid until this thread's next
 *  call into the library. */
PTRUN_STORE_API const char* ptrun_store_last_error(void);
/** Frees a value returned by ptrun_store_get or ptrun_store_compare_set. NULL is fine. */
PTRUN_STORE_API void ptrun_store_free(void* p);

/** Starts a server on host:port (port 0: any free port; host NULL: "0.0.0.0") on its own thread;
 *  *out receives the handle. Fails (ERROR) if the address cannot be resolved or bound. */
PTRUN_STORE_API int ptrun_store_server_start(const char* host, uint16_t port,
                                             ptrun_store_server** out);
/** The bound port (the ephemeral one for port 0); 0 for a NULL handle. Does not block. */
PTRUN_STORE_API uint16_t ptrun_store_server_port(const ptrun_store_server* server);
/** Closes every connection, joins the server thread and frees the handle. NULL is fine. */
PTRUN_STORE_API int ptrun_store_server_stop(ptrun_store_server* server);

/** Connects to host:port, retrying with backoff for up to timeout_ms (which is also the deadline
 *  of each later non-waiting call); *out receives the handle. CONNECTION_LOST on failure. */
PTRUN_STORE_API int ptrun_store_client_connect(const char* host, uint16_t port,
                                               ptrun_store_dialect dialect, int64_t timeout_ms,
                                               ptrun_store_client** out);
/** Closes the connection and frees the handle. NULL is fine. */
PTRUN_STORE_API void ptrun_store_client_close(ptrun_store_client* client);

/** Stores value under key (replacing it) and wakes waiters on key. */
PTRUN_STORE_API int ptrun_store_set(ptrun_store_client* client, const char* key, const void* value,
                                    size_t value_len);
/** Blocks until key exists (at most timeout_ms, then TIMEOUT); *value receives a copy (free with
 *  ptrun_store_free; NUL-terminated for convenience, not counted in *value_len). */
PTRUN_STORE_API int ptrun_store_get(ptrun_store_client* client, const char* key, int64_t timeout_ms,
                                    void** value, size_t* value_len);
/** As ptrun_store_get, into the caller's buffer of `capacity` bytes; *value_len receives the
 *  value's length, and BUFFER_TOO_SMALL (nothing copied) if it exceeds capacity. */
PTRUN_STORE_API int ptrun_store_get_into(ptrun_store_client* client, const char* key,
                                         int64_t timeout_ms, void* buffer, size_t capacity,
                                         size_t* value_len);
/** Adds delta to the decimal counter at key (absent = 0); *result (may be NULL) gets the new
 *  value. ERROR if the current value is not an integer. */
PTRUN_STORE_API int ptrun_store_add(ptrun_store_client* client, const char* key, int64_t delta,
                                    int64_t* result);
/** Sets key to desired if its value is expected (an absent key matches only an empty expected);
 *  *current receives the value now stored (or expected if key is absent), freed with
 *  ptrun_store_free; current may be NULL. */
PTRUN_STORE_API int ptrun_store_compare_set(ptrun_store_client* client, const char* key,
                                            const void* expected, size_t expected_len,
                                            const void* desired, size_t desired_len, void** current,
                                            size_t* current_len);
/** Blocks until all n keys exist, at most timeout_ms (then TIMEOUT naming the missing keys). */
PTRUN_STORE_API int ptrun_store_wait(ptrun_store_client* client, const char* const* keys, size_t n,
                                     int64_t timeout_ms);
/** *exists receives 1 if all n keys exist, else 0. Does not block. */
PTRUN_STORE_API int ptrun_store_check(ptrun_store_client* client, const char* const* keys, size_t n,
                                      int* exists);
/** Erases key; *deleted (may be NULL) receives 1 if it existed. */
PTRUN_STORE_API int ptrun_store_delete_key(ptrun_store_client* client, const char* key,
                                           int* deleted);
/** *count receives the number of keys in the whole store. */
PTRUN_STORE_API int ptrun_store_num_keys(ptrun_store_client* client, int64_t* count);

#ifdef __cplusplus
}
#endif

#endif /* PTRUN_RENDEZVOUS_C_API_H */
