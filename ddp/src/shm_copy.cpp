#include "ptrun/ddp/shm_copy.hpp"

#include <string>

#include "copy_strategy.hpp"
#include "ptrun/ddp/errors.hpp"

namespace ptrun::ddp {

std::string_view shm_copy_name(ShmCopy copy) {
    const auto fixed = detail::fixed_strategy(copy);
    return fixed ? detail::copy_strategy_name(*fixed) : "auto";
}

ShmCopy parse_shm_copy(std::string_view text) {
    for (auto copy : {ShmCopy::Auto, ShmCopy::Streamed, ShmCopy::Plain, ShmCopy::SingleCopy}) {
        if (text == shm_copy_name(copy)) return copy;
    }
    throw CollectiveError("init_process_group: unknown shm_copy '" + std::string(text) +
                          "' (expected auto, streamed, plain or single-copy)");
}

}  // namespace ptrun::ddp
