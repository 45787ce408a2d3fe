#pragma once
/// The hosts of `ptrun --hosts/--hostfile`: their grammar and the --include/--exclude filters.
/// Pure: text in, a list out; every refusal is a UsageError naming the input and what was
/// expected. A host name is only ever passed as one argument (never through a shell), and names
/// that could be read as something else (an option, a shell word) are refused here already.
///
/// Grammar: `--hosts HOST[:SLOTS],...`; a hostfile holds one `HOST [slots=N]` a line, `#` starts
/// a comment (DeepSpeed's and Open MPI's shared syntax); HOST is `[USER@]NAME`, NAME of letters,
/// digits, '.', '-' and '_', not starting with '-' or '.'.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::launcher {

/// At most this many hosts: the launching ptrun holds one remote shell and four descriptors per
/// host, so 10,000 hosts would pass the usual open-files limit (and an ssh per host that far is
/// what pdsh's fan-out trees are for).
inline constexpr std::size_t kMaxHosts = 4096;
/// At most this many slots (workers) on one host.
inline constexpr int kMaxSlots = 1024;

/// One host of the job, in the order given.
struct HostEntry {
    std::string host;          ///< as given, `[USER@]NAME`: what the remote shell is given
    std::optional<int> slots;  ///< its --nproc-per-node, when the list or file says
    /// NAME alone (no USER@): how the node is named in lines and in the rendezvous endpoint.
    std::string name() const;
};

/// Parses `--hosts` text: `HOST[:SLOTS],...`. Throws UsageError naming the entry.
std::vector<HostEntry> parse_host_list(std::string_view text);

/// Parses a hostfile's text (`path` names it in errors, with the line number).
std::vector<HostEntry> parse_hostfile(std::string_view text, std::string_view path);

/// The hosts left after `--include` (only those listed, their slots lowered to `:SLOTS`) and
/// `--exclude` (those listed left out, or `:SLOTS` fewer slots); empty texts filter nothing.
/// Throws UsageError for an entry naming no host of the list, or leaving none.
std::vector<HostEntry> filter_hosts(std::vector<HostEntry> hosts, std::string_view include,
                                    std::string_view exclude);

/// Throws UsageError unless `host` is `[USER@]NAME` as above (`what` names the input).
void check_host_name(std::string_view host, std::string_view what);

}  // namespace ptrun::launcher
