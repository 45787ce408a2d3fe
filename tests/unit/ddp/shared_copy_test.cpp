#include "shared_copy.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <iterator>
#include <vector>

using namespace ptrun::ddp::detail;

TEST_CASE("copy_to_shared copies any length at any alignment", "[ddp]") {
    // Lengths on both sides of the streaming threshold (32 KiB) and of whole 64-byte lines.
    std::vector<unsigned char> src(33'000);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 31 + 7);
    for (const std::size_t bytes :
         {0u, 1u, 63u, 64u, 32'767u, 32'768u, 32'769u, 32'832u, 32'900u}) {
        for (std::size_t dst_offset = 0; dst_offset < 64; dst_offset += 9) {
            for (const std::size_t src_offset : {0u, 1u, 16u}) {
                alignas(64) static unsigned char dst[33'000];
                std::fill(std::begin(dst), std::end(dst), 0);
                copy_to_shared(dst + dst_offset, src.data() + src_offset, bytes);
                INFO("bytes=" << bytes << " dst_offset=" << dst_offset
                              << " src_offset=" << src_offset);
                const unsigned char* from = src.data() + src_offset;
                CHECK(std::vector<unsigned char>(dst + dst_offset, dst + dst_offset + bytes) ==
                      std::vector<unsigned char>(from, from + bytes));
                // Nothing around the destination range is touched.
                const auto zero = [](unsigned char c) { return c == 0; };
                CHECK(std::all_of(dst, dst + dst_offset, zero));
                CHECK(std::all_of(dst + dst_offset + bytes, std::end(dst), zero));
            }
        }
    }
}
