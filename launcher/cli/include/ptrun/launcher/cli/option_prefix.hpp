#pragma once
/// Long options abbreviated as torchrun (argparse) takes them: `--nproc_per_nod=2` is
/// `--nproc_per_node=2`, since no other option begins so.

#include <string>
#include <vector>

namespace ptrun::launcher {

/// `args` (ptrun's own, PROGRAM and its arguments after them) with every long option before
/// PROGRAM that abbreviates exactly one option (either spelling, --help or --version) written out
/// whole; exact names, unknown ones and everything from PROGRAM on are left as given. Throws
/// UsageError listing the candidates for an abbreviation that several options begin.
std::vector<std::string> expand_option_prefixes(std::vector<std::string> args);

}  // namespace ptrun::launcher
