#include "ptrun/launcher/cli/completion_script.hpp"

#include <catch2/catch.hpp>
#include <regex>

#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/info_option.hpp"
#include "ptrun/launcher/cli/option.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;

namespace {

/// Every spelling ptrun takes on its command line: "--nproc-per-node", "--nproc_per_node", "-r".
std::vector<std::string> every_spelling() {
    std::vector<std::string> out;
    for (const auto& info : info_option_table()) {
        out.push_back("--" + std::string(info.dashed));
        if (!info.short_name.empty()) out.emplace_back(info.short_name);
    }
    for (const auto& spec : option_table()) {
        out.push_back("--" + std::string(spec.dashed));
        out.push_back("--" + std::string(spec.underscored));
        if (!spec.short_name.empty()) out.emplace_back(spec.short_name);
    }
    return out;
}

/// True when `word` stands in `text` as a word of its own (not as part of a longer option).
bool has_word(const std::string& text, const std::string& word) {
    const std::regex whole("(^|[\\s'|(])" + std::regex_replace(word, std::regex("[-.]"), "\\$&") +
                           "($|[\\s'|)=+\\[/])");
    return std::regex_search(text, whole);
}

/// The words of `spec` joined by spaces: "static c10d etcd-v2 etcd".
std::string words_of(const OptionSpec& spec) {
    std::string out;
    for (auto word : spec.words) out += (out.empty() ? "" : " ") + std::string(word);
    return out;
}

}  // namespace

TEST_CASE("completion: every script names both spellings of every option", "[launcher][cli]") {
    for (auto shell : info_option_spec(InfoOption::PrintCompletion).words) {
        const auto script = completion_script(shell);
        for (const auto& spelling : every_spelling()) {
            INFO(shell << ": " << spelling);
            CHECK(has_word(script, spelling));
        }
    }
    const auto bash = completion_script("bash");
    CHECK(has_word(bash, "--nproc-per-node"));
    CHECK(has_word(bash, "--nproc_per_node"));
    CHECK_FALSE(has_word(bash, "--nproc"));
}

TEST_CASE("completion: bash offers the words of options whose values are words",
          "[launcher][cli]") {
    const auto bash = completion_script("bash");
    CHECK(bash.find("compgen -W 'static c10d etcd-v2 etcd'") != std::string::npos);
    CHECK(bash.find("compgen -W 'bash zsh tcsh'") != std::string::npos);
    std::size_t worded = 0;
    for (const auto& spec : option_table()) {
        if (spec.words.empty()) continue;
        ++worded;
        INFO(spec.dashed);
        std::string spellings = spec.short_name.empty() ? "" : std::string(spec.short_name) + "|";
        spellings += "--" + std::string(spec.dashed);
        if (spec.underscored != spec.dashed) spellings += "|--" + std::string(spec.underscored);
        const auto arm = spellings + ")\n            mapfile -t COMPREPLY < <(compgen -W '" +
                         words_of(spec) + "'";
        CHECK(bash.find(arm) != std::string::npos);
    }
    CHECK(worded >= 8);  // nproc-per-node, rdzv-backend, slurm-mode, launcher-env, ...
    CHECK(bash.find("--log-dir|--log_dir)\n            compopt -o filenames 2>/dev/null\n     "
                    "       mapfile -t COMPREPLY < <(compgen -d") != std::string::npos);
    CHECK(bash.find("complete -F _ptrun ptrun") != std::string::npos);
}

TEST_CASE("completion: zsh gives _arguments a spec per spelling with its values",
          "[launcher][cli]") {
    const auto zsh = completion_script("zsh");
    CHECK(zsh.rfind("#compdef ptrun\n", 0) == 0);
    CHECK(zsh.find("_arguments -S -A '-*' $specs") != std::string::npos);
    CHECK(zsh.find("'--rdzv-backend=[Rendezvous backend: static, c10d or etcd-v2]:rdzv "
                   "backend:(static c10d etcd-v2 etcd)'") != std::string::npos);
    CHECK(zsh.find("'--rdzv_backend=[") != std::string::npos);
    CHECK(zsh.find("'--standalone[Single-node job with a local store on a free port]'") !=
          std::string::npos);
    CHECK(zsh.find("'-r+[") != std::string::npos);
    CHECK(zsh.find(":log dir:_files -/'") != std::string::npos);
    CHECK(zsh.find("'--print-completion=[") != std::string::npos);
    CHECK(zsh.find("'*::program arguments:_normal'") != std::string::npos);
    for (const auto& spec : option_table()) {
        if (spec.words.empty()) continue;
        INFO(spec.dashed);
        CHECK(zsh.find(":(" + words_of(spec) + ")'") != std::string::npos);
    }
    // Brackets in help text stay inside its description: "HOST[:PORT]".
    CHECK(zsh.find("'--rdzv-endpoint=[Rendezvous endpoint HOST\\[:PORT\\]") != std::string::npos);
}

TEST_CASE("completion: tcsh completes values after both spellings and after '='",
          "[launcher][cli]") {
    const auto tcsh = completion_script("tcsh");
    CHECK(tcsh.find("'n/--rdzv_backend/(static c10d etcd-v2 etcd)/'") != std::string::npos);
    CHECK(tcsh.find("'c/--rdzv-backend=/(static c10d etcd-v2 etcd)/'") != std::string::npos);
    CHECK(tcsh.find("'n/--log-dir/d/'") != std::string::npos);
    CHECK(tcsh.find("'n/-r/(0 1 2 3)/'") != std::string::npos);
    CHECK(tcsh.find("'C/-/$_ptrun_options/'") != std::string::npos);
}

TEST_CASE("completion: the words and spellings need no quoting in any shell", "[launcher][cli]") {
    const std::regex plain("[-A-Za-z0-9_.:]+");
    for (const auto& spelling : every_spelling()) CHECK(std::regex_match(spelling, plain));
    for (const auto& spec : option_table()) {
        for (auto word : spec.words) CHECK(std::regex_match(std::string(word), plain));
    }
}

TEST_CASE("completion: an unknown shell is a usage error naming it", "[launcher][cli]") {
    CHECK_THROWS_MATCHES(completion_script("fish"), UsageError,
                         Catch::Message("--print-completion 'fish': expected bash, zsh or tcsh"));
    CHECK_THROWS_AS(completion_script(""), UsageError);
}

TEST_CASE("completion: --print-completion prints the script and launches nothing",
          "[launcher][cli]") {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"--print-completion", "bash"},
          std::vector<std::string>{"--print-completion=bash"},
          std::vector<std::string>{"--print-comp", "bash"},
          std::vector<std::string>{"--nnodes", "2", "--print-completion", "bash", "train.py"}}) {
        auto parsed = parse_command_line(args, {});
        REQUIRE(std::holds_alternative<InfoRequest>(parsed));
        CHECK(std::get<InfoRequest>(parsed).text == completion_script("bash"));
    }
    CHECK_THROWS_WITH(parse_command_line({"--print-completion", "fish"}, {}),
                      Catch::Contains("'fish'"));
    CHECK_THROWS_AS(parse_command_line({"--print-completion"}, {}), UsageError);
    auto help = parse_command_line({"--help"}, {});
    REQUIRE(std::holds_alternative<InfoRequest>(help));
    CHECK_THAT(std::get<InfoRequest>(help).text, Catch::Contains("--print-completion SHELL"));
}
