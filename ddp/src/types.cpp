#include "ptrun/ddp/types.hpp"

namespace ptrun::ddp {

std::size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::Float32:
            return 4;
        case DType::Float64:
            return 8;
        case DType::Int32:
            return 4;
        case DType::Int64:
            return 8;
    }
    return 0;
}

std::string_view dtype_name(DType dtype) {
    switch (dtype) {
        case DType::Float32:
            return "float32";
        case DType::Float64:
            return "float64";
        case DType::Int32:
            return "int32";
        case DType::Int64:
            return "int64";
    }
    return "?";
}

std::string_view reduce_op_name(ReduceOp op) {
    switch (op) {
        case ReduceOp::Sum:
            return "sum";
        case ReduceOp::Avg:
            return "avg";
        case ReduceOp::Min:
            return "min";
        case ReduceOp::Max:
            return "max";
    }
    return "?";
}

}  // namespace ptrun::ddp
