#include "validate.hpp"

#include <string>

#include "ptrun/ddp/errors.hpp"

namespace ptrun::ddp::detail {

void check_buffer(const char* collective, const void* data, std::size_t count) {
    if (data == nullptr && count != 0) {
        throw CollectiveError(std::string(collective) + ": null buffer for " +
                              std::to_string(count) + " elements");
    }
}

void check_root(const char* collective, int root, int size) {
    if (root < 0 || root >= size) {
        throw CollectiveError(std::string(collective) + ": root " + std::to_string(root) +
                              " is not a rank of a group of size " + std::to_string(size));
    }
}

}  // namespace ptrun::ddp::detail
