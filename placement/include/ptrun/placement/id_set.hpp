#pragma once
/// A set of small non-negative ids (CPUs, NUMA nodes) and the kernel's list syntax for it
/// ("0-3,8,10-11", as in sysfs cpulist files and /proc/PID/status *_allowed_list).

#include <string>
#include <string_view>
#include <vector>

namespace ptrun::placement {

/// Largest id a list may name: above Linux's NR_CPUS (8192) and MAX_NUMNODES (1024), low enough
/// that a hostile list cannot ask for unbounded memory.
inline constexpr int kMaxId = 65535;

/// Ids in ascending order, each once.
class IdSet {
  public:
    IdSet() = default;
    /// The set of `ids` (any order, repeats dropped).
    explicit IdSet(std::vector<int> ids);
    /// first..last inclusive (empty when last < first).
    static IdSet range(int first, int last);

    const std::vector<int>& ids() const { return ids_; }
    bool empty() const { return ids_.empty(); }
    std::size_t size() const { return ids_.size(); }
    bool contains(int id) const;
    /// The lowest id; the set must not be empty.
    int front() const { return ids_.front(); }

    IdSet operator&(const IdSet& other) const;
    IdSet operator|(const IdSet& other) const;
    bool operator==(const IdSet&) const = default;

  private:
    std::vector<int> ids_;
};

/// Parses the kernel's list syntax: comma-separated ids and inclusive ranges, surrounding
/// whitespace (a sysfs file's newline) ignored; "" is the empty set. Throws PlacementError
/// naming the text when an entry is malformed, runs backwards or exceeds kMaxId.
IdSet parse_id_list(std::string_view text);

/// The shortest list text for `set` ("0-3,8"); "" for the empty set.
std::string to_list(const IdSet& set);

}  // namespace ptrun::placement
