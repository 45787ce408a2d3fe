#include "ptrun/rendezvous/store.hpp"

namespace ptrun::rdzv {

void Store::queue_push_many(std::string_view key, const std::vector<std::string>& values) {
    for (const auto& value : values) queue_push(key, value);
}

}  // namespace ptrun::rdzv
