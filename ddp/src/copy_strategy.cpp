#include "copy_strategy.hpp"

namespace ptrun::ddp::detail {

std::string_view copy_strategy_name(CopyStrategy strategy) {
    switch (strategy) {
        case CopyStrategy::Streamed:
            return "streamed";
        case CopyStrategy::Plain:
            return "plain";
        case CopyStrategy::SingleCopy:
            return "single-copy";
    }
    return "?";
}

std::optional<CopyStrategy> fixed_strategy(ShmCopy copy) {
    switch (copy) {
        case ShmCopy::Auto:
            break;
        case ShmCopy::Streamed:
            return CopyStrategy::Streamed;
        case ShmCopy::Plain:
            return CopyStrategy::Plain;
        case ShmCopy::SingleCopy:
            return CopyStrategy::SingleCopy;
    }
    return std::nullopt;
}

}  // namespace ptrun::ddp::detail
