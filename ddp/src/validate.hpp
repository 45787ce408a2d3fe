#pragma once
/// Argument checks shared by the backends; each throws CollectiveError naming the collective.

#include <cstddef>

namespace ptrun::ddp::detail {

/// Throws if `data` is null while `count` > 0.
void check_buffer(const char* collective, const void* data, std::size_t count);

/// Throws unless 0 <= root < size.
void check_root(const char* collective, int root, int size);

}  // namespace ptrun::ddp::detail
