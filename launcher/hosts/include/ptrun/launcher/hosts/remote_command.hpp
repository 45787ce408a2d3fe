#pragma once
/// The command line a remote shell is given: `CMD HOST COMMAND`, COMMAND one string that the
/// remote user's POSIX shell reads (ssh joins its arguments and hands them to `$SHELL -c`).
/// Every word of COMMAND is single-quoted, so that shell expands nothing of ours: a value holding
/// spaces, ';', '$(...)' or a newline reaches the remote ptrun as the one argument it was here.
/// On this side nothing goes through a shell: CMD is split into words (`--remote-shell`) and run
/// directly. Pure.

#include <utility>
#include <string>
#include <string_view>
#include <vector>

namespace ptrun::launcher {

/// `word` in single quotes for a POSIX shell ('\'' for each quote inside): always one word.
std::string shell_quote(std::string_view word);

/// `--remote-shell` text as words: split at blanks, '...' and "..." group (a backslash escapes
/// the next character outside '...'), nothing expanded. Throws UsageError for an unterminated
/// quote or no words at all.
std::vector<std::string> split_command_words(std::string_view text);

/// What one host's ptrun is started with.
struct RemoteAgentCommand {
    std::string directory;  ///< the working directory there (the launching ptrun's)
    /// Variables set for it, in order: NAME and value (names checked by remote_env.hpp).
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<std::string> argv;  ///< the remote ptrun and every argument
};

/// COMMAND: `cd -- DIR && exec env NAME=VALUE... PTRUN ARGS...`, each word quoted.
std::string remote_command_line(const RemoteAgentCommand& command);

/// The argv run here: the remote shell's words, then `host`, then `command_line`.
std::vector<std::string> remote_shell_argv(const std::vector<std::string>& shell,
                                           const std::string& host,
                                           const std::string& command_line);

}  // namespace ptrun::launcher
