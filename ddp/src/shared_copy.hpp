#pragma once
/// Copies into shared memory that another core reads next.

#include <cstddef>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace ptrun::ddp::detail {

/// Copies shorter than this stay in cache: when the two cores share a cache complex the reader
/// fetches them from there sooner than from memory (2 ranks, 4 KiB allreduce 0.7 us plain, 1.0
/// streamed; 16 KiB 1.4 / 2.4), and across complexes small copies gain nothing from streaming.
inline constexpr std::size_t kStreamMinBytes = 32 * 1024;

/// Whether a copy of `bytes` for another core goes through non-temporal stores.
constexpr bool worth_streaming(std::size_t bytes) { return bytes >= kStreamMinBytes; }

/// memcpy(dst, src, bytes) with non-temporal stores on x86-64 (the lines go to memory instead of
/// staying dirty in this core's cache, which the reading core would otherwise have to probe:
/// 2-3x slower here when the two cores sit on different cache complexes), then a store fence,
/// so a release store that follows publishes them. Short copies (worth_streaming), `stream` false
/// (the caller measured that plain stores win here: see StrategyTuner) and other CPUs: a memcpy.
void copy_to_shared(void* dst, const void* src, std::size_t bytes, bool stream = true);

/// copy_to_shared without the fence: a run of these must end with shared_store_fence().
void stream_to_shared(void* dst, const void* src, std::size_t bytes, bool stream = true);

/// stream_to_shared of one 64-byte line: `dst` 64-byte aligned, `src` 16-byte aligned.
inline void stream_line(void* dst, const void* src) {
#if defined(__x86_64__)
    auto* d = static_cast<__m128i*>(dst);
    const auto* s = static_cast<const __m128i*>(src);
    _mm_stream_si128(d, _mm_load_si128(s));
    _mm_stream_si128(d + 1, _mm_load_si128(s + 1));
    _mm_stream_si128(d + 2, _mm_load_si128(s + 2));
    _mm_stream_si128(d + 3, _mm_load_si128(s + 3));
#else
    std::memcpy(dst, src, 64);
#endif
}

/// Orders every stream_to_shared before the stores that follow (x86 sfence; elsewhere nothing).
void shared_store_fence();

}  // namespace ptrun::ddp::detail
