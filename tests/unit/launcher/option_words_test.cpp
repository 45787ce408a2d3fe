// The words the option table lists for an option's value (OptionSpec::words, offered by shell
// completion) are the ones its parser takes: each is accepted, and a refusal names them.
#include <catch2/catch.hpp>
#include <functional>
#include <map>

#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/launcher_env.hpp"
#include "ptrun/launcher/cli/option.hpp"
#include "ptrun/launcher/cli/rdzv_backend.hpp"
#include "ptrun/launcher/cli/slurm_mode.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

using namespace ptrun::launcher;

namespace {

/// Resolves `ptrun FLAG VALUE train` on a host with 8 CPUs, 2 GPUs and one Intel GPU, Gaudi
/// and Ascend NPU each; throws UsageError.
void resolved(Option key, const std::string& value) {
    HostFacts host;
    host.cpu_count = 8;
    host.gpus = ptrun::env::parse_cuda_visible_devices("0,1");
    for (auto kind : {ptrun::env::DeviceKind::IntelGpu, ptrun::env::DeviceKind::Gaudi,
                      ptrun::env::DeviceKind::AscendNpu}) {
        host.accelerators.push_back({{kind, {{0, "", ""}}, "/dev"}, {{"0", 0u}}});
    }
    const std::vector<std::string> args{flag_text(key), value, "train"};
    (void)resolve(std::get<LaunchOptions>(parse_command_line(args, {})), host);
}

RawValue given(const std::string& value) { return {value, Source::Flag, {}}; }

/// How each option with words parses its value, and whether its refusal lists the words.
struct Parser {
    std::function<void(const std::string&)> parse;  ///< throws UsageError on a refused value
    bool refusal_names_words;
};

std::map<Option, Parser> parsers() {
    auto through_resolve = [](Option key) {
        return [key](const std::string& v) { resolved(key, v); };
    };
    return {
        {Option::NprocPerNode, {through_resolve(Option::NprocPerNode), true}},
        {Option::RdzvBackend, {[](const std::string& v) { parse_rdzv_backend(given(v)); }, true}},
        {Option::StartMethod, {through_resolve(Option::StartMethod), true}},
        {Option::RestartPolicy, {through_resolve(Option::RestartPolicy), true}},
        {Option::EventLogHandler, {through_resolve(Option::EventLogHandler), true}},
        {Option::Redirects, {through_resolve(Option::Redirects), false}},  // "expected 0-3"
        {Option::Tee, {through_resolve(Option::Tee), false}},
        {Option::SlurmMode, {[](const std::string& v) { parse_slurm_mode(given(v)); }, true}},
        {Option::LauncherEnv, {[](const std::string& v) { parse_launcher_env(given(v)); }, true}},
        {Option::NumaBinding, {through_resolve(Option::NumaBinding), true}},
    };
}

}  // namespace

TEST_CASE("option words: every listed word is a value the option's parser accepts",
          "[launcher][option]") {
    const auto known = parsers();
    for (const auto& spec : option_table()) {
        if (spec.words.empty()) continue;
        INFO("--" << spec.dashed << " (add its parser to option_words_test.cpp)");
        REQUIRE(known.count(spec.key) == 1);
        for (auto word : spec.words) {
            INFO("word " << word);
            CHECK_NOTHROW(known.at(spec.key).parse(std::string(word)));
        }
    }
}

TEST_CASE("option words: a refused value's message names the listed words", "[launcher][option]") {
    for (const auto& [key, parser] : parsers()) {
        INFO("--" << option_name(key));
        std::string message;
        try {
            parser.parse("no-such-value");
        } catch (const UsageError& e) {
            message = e.what();
        }
        REQUIRE_FALSE(message.empty());
        if (!parser.refusal_names_words) continue;
        for (auto word : option_spec(key).words)
            CHECK_THAT(message, Catch::Contains(std::string(word)));
    }
}

TEST_CASE("option words: only directories are completed as directories", "[launcher][option]") {
    for (const auto& spec : option_table()) {
        INFO(spec.dashed);
        CHECK((spec.hint == ValueHint::Directory) == (spec.key == Option::LogDir));
        if (spec.kind == OptionKind::Flag) CHECK(spec.words.empty());
    }
}
