#pragma once
/// torchrun's `${local_rank}` macro in a worker's arguments (torch.distributed.elastic's
/// `macros.substitute`: Python's string.Template.safe_substitute with local_rank alone).

#include <string>
#include <string_view>

namespace ptrun::launcher {

/// `arg` with `${local_rank}` and `$local_rank` replaced by `local_rank`, and `$$` by `$`, as
/// Template.safe_substitute does; any other `$` (another name, a lone `$`) is left as it is.
std::string substitute_local_rank(std::string_view arg, int local_rank);

}  // namespace ptrun::launcher
