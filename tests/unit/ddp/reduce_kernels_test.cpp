#include "reduce_kernels.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

using namespace ptrun::ddp;
using namespace ptrun::ddp::detail;

TEST_CASE("dtype_size and dtype_of agree", "[ddp]") {
    STATIC_REQUIRE(dtype_of<float>() == DType::Float32);
    STATIC_REQUIRE(dtype_of<double>() == DType::Float64);
    STATIC_REQUIRE(dtype_of<std::int32_t>() == DType::Int32);
    STATIC_REQUIRE(dtype_of<std::int64_t>() == DType::Int64);
    CHECK(dtype_size(DType::Float32) == 4);
    CHECK(dtype_size(DType::Float64) == 8);
    CHECK(dtype_size(DType::Int32) == 4);
    CHECK(dtype_size(DType::Int64) == 8);
    CHECK(dtype_name(DType::Int64) == "int64");
    CHECK(reduce_op_name(ReduceOp::Avg) == "avg");
}

TEMPLATE_TEST_CASE("reduce2 applies each op element-wise", "[ddp]", float, double, std::int32_t,
                   std::int64_t) {
    const std::vector<TestType> a{1, -5, 7, 0, 3};
    const std::vector<TestType> b{2, 4, -7, 0, 3};
    std::vector<TestType> out(a.size());
    reduce2(dtype_of<TestType>(), ReduceOp::Sum, out.data(), a.data(), b.data(), a.size());
    CHECK(out == std::vector<TestType>{3, -1, 0, 0, 6});
    reduce2(dtype_of<TestType>(), ReduceOp::Min, out.data(), a.data(), b.data(), a.size());
    CHECK(out == std::vector<TestType>{1, -5, -7, 0, 3});
    reduce2(dtype_of<TestType>(), ReduceOp::Max, out.data(), a.data(), b.data(), a.size());
    CHECK(out == std::vector<TestType>{2, 4, 7, 0, 3});
}

TEST_CASE("reduce2 may write over its first input", "[ddp]") {
    std::vector<double> a(1000, 1.5), b(1000, 2.0);
    reduce2(DType::Float64, ReduceOp::Sum, a.data(), a.data(), b.data(), a.size());
    CHECK(a == std::vector<double>(1000, 3.5));
}

TEST_CASE("Avg on integers is the sum divided by the world size, truncating toward zero", "[ddp]") {
    const std::vector<std::int32_t> s0{7, -7, 1}, s1{0, 0, 0}, s2{0, 0, 1};
    const void* srcs[] = {s0.data(), s1.data(), s2.data()};
    std::vector<std::int32_t> out(3);
    reduce_n(DType::Int32, ReduceOp::Avg, out.data(), srcs, 3, out.size(), 3);
    CHECK(out == std::vector<std::int32_t>{2, -2, 0});
}

TEST_CASE("Avg on floats divides the rank-ordered sum", "[ddp]") {
    const std::vector<float> s0{1.0f, 0.1f}, s1{2.0f, 0.2f};
    const void* srcs[] = {s0.data(), s1.data()};
    std::vector<float> out(2);
    reduce_n(DType::Float32, ReduceOp::Avg, out.data(), srcs, 2, out.size(), 2);
    CHECK(out[0] == 1.5f);
    CHECK(out[1] == (0.1f + 0.2f) / 2.0f);
}

TEST_CASE("reduce_n of one source copies it", "[ddp]") {
    const std::vector<std::int64_t> s0{1, 2, 3};
    const void* srcs[] = {s0.data()};
    std::vector<std::int64_t> out(3);
    reduce_n(DType::Int64, ReduceOp::Max, out.data(), srcs, 1, out.size(), 1);
    CHECK(out == s0);
}

namespace {

/// nsrc sources of `count` small values each (negative ones too), distinct per source.
template <class T>
std::vector<std::vector<T>> sample_sources(int nsrc, std::size_t count) {
    std::vector<std::vector<T>> s(static_cast<std::size_t>(nsrc));
    for (std::size_t k = 0; k < s.size(); ++k) {
        for (std::size_t i = 0; i < count; ++i) {
            s[k].push_back(static_cast<T>(static_cast<long>((i * 7 + k * 13) % 23) - 11));
        }
    }
    return s;
}

template <class T>
std::vector<const void*> pointers(const std::vector<std::vector<T>>& sources) {
    std::vector<const void*> p;
    for (const auto& v : sources) p.push_back(v.data());
    return p;
}

}  // namespace

TEMPLATE_TEST_CASE("reduce_n_publish stores reduce_n's result to shared and local outputs", "[ddp]",
                   float, double, std::int32_t, std::int64_t) {
    // Counts and offsets cover the element-wise head and tail around whole 64-byte lines, stored
    // (short) and streamed (8200 elements: at least 32 KiB);
    // the local output is each source in turn (it may alias one) or absent (alias -1).
    const DType dtype = dtype_of<TestType>();
    for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Min, ReduceOp::Max}) {
        for (int nsrc = 1; nsrc <= 4; ++nsrc) {
            for (const std::size_t count : {1u, 17u, 100u, 8200u}) {
                const auto sources = sample_sources<TestType>(nsrc, count);
                std::vector<TestType> want(count);
                reduce_n(dtype, op, want.data(), pointers(sources).data(), nsrc, count, nsrc);
                for (std::size_t offset = 0; offset < 3; ++offset) {
                    for (int alias = -1; alias < nsrc; ++alias) {
                        auto copy = sources;
                        alignas(64) static TestType shared[8200 + 3];
                        TestType* out = shared + offset;
                        void* local = alias < 0 ? nullptr : copy[std::size_t(alias)].data();
                        reduce_n_publish(dtype, op, out, local, pointers(copy).data(), nsrc, count,
                                         nsrc);
                        INFO("op=" << reduce_op_name(op) << " nsrc=" << nsrc << " count=" << count
                                   << " offset=" << offset << " alias=" << alias);
                        CHECK(std::vector<TestType>(out, out + count) == want);
                        if (alias >= 0) CHECK(copy[std::size_t(alias)] == want);
                    }
                }
            }
        }
    }
}
