#include "shared_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ptrun::ddp::detail {

void stream_to_shared(void* dst_ptr, const void* src_ptr, std::size_t bytes, bool stream) {
#if defined(__x86_64__)
    if (!stream || !worth_streaming(bytes)) {
        std::memcpy(dst_ptr, src_ptr, bytes);
        return;
    }
    auto* dst = static_cast<char*>(dst_ptr);
    const auto* src = static_cast<const char*>(src_ptr);
    // Plain stores up to dst's first cache-line boundary, streamed whole lines, plain tail.
    const std::size_t head =
        std::min(bytes, (64 - reinterpret_cast<std::uintptr_t>(dst) % 64) % 64);
    std::memcpy(dst, src, head);
    std::size_t i = head;
    for (; i + 64 <= bytes; i += 64) {
        alignas(64) unsigned char line[64];
        std::memcpy(line, src + i, 64);
        stream_line(dst + i, line);
    }
    std::memcpy(dst + i, src + i, bytes - i);
#else
    (void)stream;
    std::memcpy(dst_ptr, src_ptr, bytes);
#endif
}

void shared_store_fence() {
#if defined(__x86_64__)
    _mm_sfence();
#endif
}

void copy_to_shared(void* dst, const void* src, std::size_t bytes, bool stream) {
    stream_to_shared(dst, src, bytes, stream);
    shared_store_fence();
}

}  // namespace ptrun::ddp::detail
