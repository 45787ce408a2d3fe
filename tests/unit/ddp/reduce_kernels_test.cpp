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

TEST_CASE("Avg on integers is the sum divided by the world size, truncating toward zero",
          "[ddp]") {
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

TEST_CASE("reduce_n_dual stores the same result twice, even over one of its sources", "[ddp]") {
    for (int nsrc : {2, 3, 4}) {
        std::vector<std::vector<std::int64_t>> s(static_cast<std::size_t>(nsrc));
        std::vector<const void*> srcs;
        for (int k = 0; k < nsrc; ++k) {
            s[static_cast<std::size_t>(k)] = {7 * (k + 1), -3 * k, 100 + k};
        }
        for (auto& v : s) srcs.push_back(v.data());
        for (int alias = 0; alias < nsrc; ++alias) {
            auto copy = s;
            std::vector<const void*> p;
            for (auto& v : copy) p.push_back(v.data());
            std::vector<std::int64_t> out(3);
            void* out2 = copy[static_cast<std::size_t>(alias)].data();
            reduce_n_dual(DType::Int64, ReduceOp::Avg, out.data(), out2, p.data(), nsrc, 3, nsrc);
            std::vector<std::int64_t> want(3);
            reduce_n(DType::Int64, ReduceOp::Avg, want.data(), srcs.data(), nsrc, 3, nsrc);
            INFO("nsrc=" << nsrc << " alias=" << alias);
            CHECK(out == want);
            CHECK(copy[static_cast<std::size_t>(alias)] == want);
        }
    }
}
