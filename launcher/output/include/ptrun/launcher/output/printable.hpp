#pragma once
/// Text from outside ptrun (a worker's file-timer scope, a section name, an error file, a path
/// the user gave) made safe to print: a newline or an escape sequence in it could otherwise forge
/// a line of ptrun's own ("[ptrun host:1] info: all workers succeeded") or drive the terminal.

#include <string>
#include <string_view>

namespace ptrun::launcher {

/// `text` with every control character (C0 but tab, and DEL) written as an escape: \n, \r, \e,
/// \xHH; a backslash stays as it is. For text printed within one line.
std::string printable(std::string_view text);

/// As printable(), but newlines are kept: for blocks printed line by line (a traceback, the tail
/// of a log), where each line is indented by ptrun.
std::string printable_lines(std::string_view text);

/// `word` as a POSIX shell reads it back: as is when it is plain, else in single quotes.
std::string shell_quoted(const std::string& word);

}  // namespace ptrun::launcher
