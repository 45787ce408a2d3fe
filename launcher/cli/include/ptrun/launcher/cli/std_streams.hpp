#pragma once
/// torchrun's `--redirects` / `--tee` values: which of a worker's streams go to log files.

#include <map>
#include <string_view>

namespace ptrun::launcher {

/// A bit set over a worker's output streams (torchrun's Std: 0 none, 1 out, 2 err, 3 all).
enum class StdMask : unsigned { None = 0, Out = 1, Err = 2, All = 3 };

/// True when `mask` includes every stream in `part`.
constexpr bool has(StdMask mask, StdMask part) {
    return (static_cast<unsigned>(mask) & static_cast<unsigned>(part)) ==
           static_cast<unsigned>(part);
}

/// A per-local-rank choice: one value for every rank, or "rank:value,..." (others get None).
class StdSpec {
  public:
    StdSpec() = default;
    explicit StdSpec(StdMask all) : all_(all) {}
    StdSpec(std::map<int, StdMask> per_rank) : per_rank_(std::move(per_rank)), mapped_(true) {}
    /// The streams chosen for `local_rank`.
    StdMask for_rank(int local_rank) const;
    /// True when no rank has any stream chosen.
    bool none() const;

  private:
    StdMask all_ = StdMask::None;
    std::map<int, StdMask> per_rank_;
    bool mapped_ = false;
};

/// Parses "3" or "0:1,1:2"; `flag` names the option in the error (UsageError).
StdSpec parse_std_spec(std::string_view text, std::string_view flag);

}  // namespace ptrun::launcher
