#include "ptrun/launcher/cli/plain_command_line.hpp"

#include <catch2/catch.hpp>
#include <functional>

#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/option_prefix.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;

namespace {

/// What a parse gave, as text: every option's value and source, the program and its arguments,
/// or the info text, or the error.
std::string outcome(const std::function<std::variant<LaunchOptions, InfoRequest>()>& parse) {
    try {
        auto result = parse();
        if (auto* info = std::get_if<InfoRequest>(&result)) return "info: " + info->text;
        const auto& o = std::get<LaunchOptions>(result);
        std::string text;
        for (const auto& spec : option_table()) {
            const auto& raw = o.at(spec.key);
            text += std::string(spec.dashed) + "=" + raw.value + "/" +
                    std::to_string(static_cast<int>(raw.source)) + raw.origin + " ";
        }
        text += "| " + o.program;
        for (const auto& a : o.program_args) text += " [" + a + "]";
        return text;
    } catch (const UsageError& e) {
        return std::string("error: ") + e.what();
    }
}

/// The command lines compared: every option in each of its spellings and forms, given twice,
/// beside `--`, with PROGRAM's own options after it, and the unusual ones left to CLI11.
std::vector<std::vector<std::string>> command_lines() {
    std::vector<std::vector<std::string>> out;
    for (const auto& spec : option_table()) {
        const std::string dashed = "--" + std::string(spec.dashed);
        const std::string under = "--" + std::string(spec.underscored);
        if (spec.kind == OptionKind::Flag) {
            out.push_back({dashed, "train"});
            out.push_back({under, dashed, "train", "--nnodes", "2"});
            out.push_back({dashed + "=1", "train"});
            if (!spec.short_name.empty()) out.push_back({std::string(spec.short_name), "mod"});
        } else {
            out.push_back({dashed, "v1", "train", "a"});
            out.push_back({dashed + "=v2", "train"});
            out.push_back({under, "v1", dashed + "=v3", "--", "train"});
            out.push_back({dashed, "train"});
            out.push_back({dashed, "-5", "train"});
            out.push_back({dashed + "=", "train"});
            if (!spec.short_name.empty()) {
                out.push_back({std::string(spec.short_name), "3", "train"});
                out.push_back({std::string(spec.short_name) + "3", "train"});
            }
        }
    }
    out.push_back({"train"});
    out.push_back({"--", "train", "--nnodes", "2"});
    out.push_back({"--nnodes", "2", "--", "--train"});
    out.push_back({"--nnodes", "2", "--"});
    out.push_back({"--nnodes", "2"});
    out.push_back({"-", "x"});
    out.push_back({"--nproc_per_nod=2", "train"});
    out.push_back({"--nproc", "2", "train"});
    out.push_back({"--no-such-option", "train"});
    out.push_back({"--help"});
    out.push_back({"--version"});
    out.push_back({"--explain"});
    out.push_back({"--standalone", "--nproc-per-node", "4", "--max-restarts", "3", "train.py",
                   "--lr", "0.1"});
    return out;
}

}  // namespace

TEST_CASE("the plain parser reads every command line as CLI11 does, or leaves it to CLI11",
          "[launcher][cli][plain]") {
    const ptrun::env::EnvMap env{{"PET_NNODES", "3"}, {"PET_MAX_RESTARTS", "7"}};
    int plain = 0;
    for (const auto& args : command_lines()) {
        std::string line;
        for (const auto& a : args) line += "'" + a + "' ";
        INFO(line);
        const auto whole = expand_option_prefixes(args);
        if (parse_plain_command_line(whole)) ++plain;
        CHECK(outcome([&] { return parse_command_line(args, env); }) ==
              outcome([&] { return parse_command_line_with_cli11(whole, env); }));
    }
    CHECK(plain > static_cast<int>(option_table().size()) * 2);  // the usual lines go plain
}

TEST_CASE("the plain parser takes the usual forms and leaves the rest", "[launcher][cli][plain]") {
    auto given = parse_plain_command_line({"--nnodes", "2", "--nproc_per_node=4", "--standalone",
                                           "--nnodes", "3", "train", "--nnodes", "9"});
    REQUIRE(given);
    CHECK(given->values[static_cast<std::size_t>(Option::Nnodes)] == "3");
    CHECK(given->values[static_cast<std::size_t>(Option::NprocPerNode)] == "4");
    CHECK(given->values[static_cast<std::size_t>(Option::Standalone)] == "1");
    CHECK(given->rest == std::vector<std::string>{"train", "--nnodes", "9"});
    CHECK_FALSE(parse_plain_command_line({"--help"}));
    CHECK_FALSE(parse_plain_command_line({"--version"}));
    CHECK_FALSE(parse_plain_command_line({"--nnodes"}));
    CHECK_FALSE(parse_plain_command_line({"--nnodes", "-1", "train"}));
    CHECK_FALSE(parse_plain_command_line({"--standalone=1", "train"}));
    CHECK_FALSE(parse_plain_command_line({"-r3", "train"}));
    CHECK_FALSE(parse_plain_command_line({"--standalone"}));
}
