#pragma once
/// The modern (torch 2.2+) TCPStore wire, as far as a simulated rendezvous agent speaks it: request
/// encoders and the shape of each reply. Mirrors rendezvous/src/protocol.cpp, which is private to
/// ptrun_rendezvous; a mismatch shows up at once as a handshake or reply error in the bench.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::bench {

/// WAIT_CANCELED, the reply to CANCEL_WAIT (STOP_WAITING is 0).
constexpr char kWaitCanceled = 1;

/// What the server sends back for one request, in order on the connection.
/// U8: a one-byte reply (CHECK's READY = 0 / NOT_READY = 1); Wait: WAIT's STOP_WAITING, or the
/// WAIT_CANCELED that also answers a CANCEL_WAIT right behind it (EventLoop pairs them).
enum class Reply { None, U8, Wait, U32, I64, Bytes, Cancel };

/// VALIDATE (magic) then PING (`nonce`): the handshake of ptrun's modern client; one U32 reply.
std::string handshake(std::uint32_t nonce);
/// ADD `key` `delta`: I64 reply (the new value).
std::string add(std::string_view key, std::int64_t delta);
/// SET: no reply.
std::string set(std::string_view key, std::string_view value);
/// GET of an existing key: Bytes reply.
std::string get(std::string_view key);
/// WAIT for every key: a Reply::Wait (STOP_WAITING = 0) once they all exist.
std::string wait(const std::vector<std::string>& keys);
/// QUEUE_PUSH: no reply.
std::string queue_push(std::string_view key, std::string_view value);
/// CHECK: U8 reply, READY (0) when every key exists.
std::string check(const std::vector<std::string>& keys);
/// CANCEL_WAIT: a Reply::Cancel. The server answers WAIT_CANCELED (1) once; when the WAIT before
/// it was still pending that one byte answers both (EventLoop pairs them), else the WAIT got its
/// STOP_WAITING (0) first.
std::string cancel_wait();

/// Length of the complete `kind` reply at the front of `in`, or 0 while it is incomplete.
std::size_t reply_length(Reply kind, std::string_view in);
/// The payload of a complete reply: the bytes of a Bytes reply, else the fixed-size value.
std::string_view reply_payload(Reply kind, std::string_view in);

}  // namespace ptrun::bench
