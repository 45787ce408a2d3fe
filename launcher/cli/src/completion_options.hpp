#pragma once
/// The options as the completion scripts see them (completion_script.cpp), and one writer per
/// shell (completion_bash.cpp, completion_zsh.cpp, completion_tcsh.cpp).

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptrun/launcher/cli/option.hpp"

namespace ptrun::launcher::detail {

/// One option as a shell completes it.
struct CompletionOption {
    std::string_view name;               ///< the dashed name: "nproc-per-node"
    std::vector<std::string> spellings;  ///< "--nproc-per-node", "--nproc_per_node" (and "-r")
    bool takes_value = false;
    std::span<const std::string_view> words;  ///< the words its value may be
    ValueHint hint = ValueHint::Text;
    std::string_view help;
};

/// Every option ptrun takes, the informational ones (--help, ...) first, then option_table()'s.
std::vector<CompletionOption> completion_options();

/// The shell script for `options`, one writer per shell; `version` goes into its header comment.
std::string bash_completion(const std::vector<CompletionOption>& options, std::string_view version);
std::string zsh_completion(const std::vector<CompletionOption>& options, std::string_view version);
std::string tcsh_completion(const std::vector<CompletionOption>& options, std::string_view version);

/// `words` joined with `separator`.
std::string joined(const std::vector<std::string>& words, std::string_view separator);

/// `words` joined with `separator`, but with `line_break` instead where a line would pass
/// `width` characters (the scripts' long lists stay readable).
std::string wrapped(const std::vector<std::string>& words, std::string_view separator,
                    std::string_view line_break, std::size_t width = 80);

/// `text` with every `from` replaced by `to` (the scripts' templates fill in their @NAME@s).
std::string replaced(std::string text, std::string_view from, std::string_view to);

}  // namespace ptrun::launcher::detail
