#pragma once
/// --log-line-prefix-template / TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE: the prefix of each worker
/// line ptrun prefixes (tee'd console lines, filtered_*.log), written as torchrun writes it, a
/// Python string.Template: `${name}` or `$name`, and `$$` for a '$'. torchrun substitutes
/// role_name, rank and local_rank; ptrun adds pid and hostname. Unlike torchrun's
/// safe_substitute, which leaves an unknown `${foo}` in the prefix as written, ptrun refuses it
/// when the template is read, so a typo shows at once. Pure: parsing and expansion.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::launcher {

/// What one worker's prefix is made of.
struct LinePrefixFields {
    std::string role_name;     ///< --role
    int rank = 0;              ///< RANK
    int local_rank = 0;        ///< LOCAL_RANK
    std::optional<pid_t> pid;  ///< nullopt until the worker runs ("?" in the prefix)
    std::string hostname;      ///< this node's name, as ptrun's default prefix "[host:rank] "
};

/// A parsed template: literal text and macros, expanded per worker.
class LinePrefixTemplate {
  public:
    /// Parses `text`. Throws UsageError naming an unknown macro ("unknown macro ${foo}") or a '$'
    /// that starts none (with its position), and listing the macros there are.
    static LinePrefixTemplate parse(std::string_view text);

    /// The prefix for one worker: each macro replaced by its field.
    std::string expand(const LinePrefixFields& fields) const;

    /// True when the template holds ${pid}: the prefix is known only once the worker runs.
    bool uses_pid() const;

    /// The template as written.
    const std::string& text() const { return text_; }

  private:
    enum class Macro { RoleName, Rank, LocalRank, Pid, Hostname };
    /// Literal text, then (unless it is the last piece) a macro.
    struct Piece {
        std::string literal;
        std::optional<Macro> macro;
    };
    std::string text_;
    std::vector<Piece> pieces_;
};

}  // namespace ptrun::launcher
