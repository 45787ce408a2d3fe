#pragma once
/// Element types and reduction operators of the collectives.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace ptrun::ddp {

/// Element type of a collective's buffers.
enum class DType { Float32, Float64, Int32, Int64 };

/// Reduction operator. Avg on integer types is the integer division of the sum by the world
/// size (truncating toward zero, as C++ `/`); on floating types it is sum * (1 / world size).
enum class ReduceOp { Sum, Avg, Min, Max };

/// Bytes per element of `dtype`.
std::size_t dtype_size(DType dtype);

/// "float32", "float64", "int32", "int64": for messages and logs.
std::string_view dtype_name(DType dtype);

/// "sum", "avg", "min", "max": for messages and logs.
std::string_view reduce_op_name(ReduceOp op);

/// The DType of C++ type T (float, double, int32_t, int64_t); anything else does not compile.
template <class T>
constexpr DType dtype_of() {
    if constexpr (std::is_same_v<T, float>) {
        return DType::Float32;
    } else if constexpr (std::is_same_v<T, double>) {
        return DType::Float64;
    } else if constexpr (std::is_same_v<T, std::int32_t>) {
        return DType::Int32;
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
        return DType::Int64;
    } else {
        static_assert(sizeof(T) == 0, "ptrun::ddp supports float, double, int32_t, int64_t");
        return DType::Float32;
    }
}

}  // namespace ptrun::ddp
