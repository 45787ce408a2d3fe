#pragma once
/// `--rdzv-conf key=value,key=value`.

#include <map>
#include <string>
#include <string_view>

// g++ 12's -Wshadow takes the enumerator Option::RdzvConf, when declared after the alias below, as
// shadowing it: the option table comes first in every translation unit that sees both.
#include "ptrun/launcher/cli/option.hpp"

namespace ptrun::launcher {

/// Parsed rendezvous settings; keys are kept as given.
using RdzvConf = std::map<std::string, std::string, std::less<>>;

/// Parses "k=v,k2=v2" (empty text: no settings); throws UsageError naming the bad item.
RdzvConf parse_rdzv_conf(std::string_view text);

}  // namespace ptrun::launcher
