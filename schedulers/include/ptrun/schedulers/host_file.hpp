#pragma once
/// Host files as launchers write them: PBS_NODEFILE and LSF's LSB_DJOB_HOSTFILE (one line per
/// slot, the host name first), and LSB_MCPU_HOSTS ("host1 4 host2 4"). Pure: text in, hosts out.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::schedulers {

/// The most bytes of a host file or a host list in a variable ptrun reads (the caller stops there
/// and says so): one line per slot for 16,384 hosts of 64 slots with 63-byte names.
inline constexpr std::size_t kMaxHostFileBytes = 64u << 20;
/// The most distinct hosts a host file may name.
inline constexpr std::size_t kMaxHostFileHosts = 65536;

/// One host and how many slots (lines, or LSB_MCPU_HOSTS's count) it holds.
struct HostSlots {
    std::string host;
    int slots = 0;

    bool operator==(const HostSlots&) const = default;
};

/// The hosts of a one-line-per-slot file, in order of first appearance, with their line counts.
/// A line's first word is the host (what follows, e.g. "slots=4", is ignored); blank lines and
/// '#' comments are skipped. Throws env::ParseError, naming `subject` (e.g.
/// "PBS_NODEFILE='/var/spool/pbs/aux/12.srv'") and the line, for a host name that is not a
/// plausible DNS name or address (control characters, over 255 bytes), for more than
/// kMaxHostFileHosts hosts, and for a file that names no host.
std::vector<HostSlots> parse_host_file(std::string_view text, std::string_view subject);

/// The hosts of LSB_MCPU_HOSTS-style text: pairs "host count", in order ("a 4 b 2"). Throws
/// env::ParseError naming `subject` for an odd word count, a count that is not 1..65536, a host
/// named twice, a bad host name, or an empty list.
std::vector<HostSlots> parse_host_count_pairs(std::string_view text, std::string_view subject);

}  // namespace ptrun::schedulers
