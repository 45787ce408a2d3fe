#include "ptrun/launcher/hosts/remote_command.hpp"

#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/output/printable.hpp"

namespace ptrun::launcher {

std::string shell_quote(std::string_view word) {
    std::string out = "'";
    for (char c : word) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

std::vector<std::string> split_command_words(std::string_view text) {
    std::vector<std::string> words;
    std::string word;
    bool in_word = false;
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote == '\'') {
            if (c == '\'') {
                quote = 0;
            } else {
                word += c;
            }
        } else if (quote == '"') {
            if (c == '"') {
                quote = 0;
            } else if (c == '\\' && i + 1 < text.size() &&
                       (text[i + 1] == '"' || text[i + 1] == '\\')) {
                word += text[++i];
            } else {
                word += c;
            }
        } else if (c == ' ' || c == '\t' || c == '\n') {
            if (in_word) words.push_back(std::move(word));
            word.clear();
            in_word = false;
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = true;
        } else if (c == '\\' && i + 1 < text.size()) {
            word += text[++i];
            in_word = true;
        } else {
            word += c;
            in_word = true;
        }
    }
    if (quote != 0) {
        throw UsageError("--remote-shell '" + printable(text) + "': an unterminated " +
                         std::string(1, quote) + " quote");
    }
    if (in_word) words.push_back(std::move(word));
    if (words.empty()) {
        throw UsageError("--remote-shell '" + printable(text) +
                         "': expected a command, e.g. 'ssh -o BatchMode=yes'");
    }
    return words;
}

std::string remote_command_line(const RemoteAgentCommand& command) {
    std::string line = "cd -- " + shell_quote(command.directory) + " && exec";
    if (!command.env.empty()) {
        line += " env";
        for (const auto& [name, value] : command.env) line += " " + shell_quote(name + "=" + value);
    }
    for (const auto& arg : command.argv) line += " " + shell_quote(arg);
    return line;
}

std::vector<std::string> remote_shell_argv(const std::vector<std::string>& shell,
                                           const std::string& host,
                                           const std::string& command_line) {
    std::vector<std::string> argv = shell;
    argv.push_back(host);
    argv.push_back(command_line);
    return argv;
}

}  // namespace ptrun::launcher
