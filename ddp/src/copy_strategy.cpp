#include "copy_strategy.hpp"

#include <string>

#include "ptrun/ddp/errors.hpp"

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

std::optional<CopyStrategy> parse_shm_copy(std::string_view text) {
    if (text == "auto") return std::nullopt;
    for (int i = 0; i < kCopyStrategies; ++i) {
        const auto strategy = static_cast<CopyStrategy>(i);
        if (text == copy_strategy_name(strategy)) return strategy;
    }
    throw CollectiveError("init_process_group: unknown shm_copy '" + std::string(text) +
                          "' (expected auto, streamed, plain or single-copy)");
}

}  // namespace ptrun::ddp::detail
