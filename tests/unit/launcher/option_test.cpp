#include "ptrun/launcher/cli/option.hpp"

#include <catch2/catch.hpp>
#include <cctype>
#include <set>

#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/launch_options.hpp"

using namespace ptrun::launcher;

namespace {

/// The keys whose command-line spellings (dashed, underscored, short) include `name`.
std::vector<Option> keys_spelled(std::string_view name) {
    std::vector<Option> out;
    for (const auto& spec : option_table()) {
        if (spec.dashed == name || spec.underscored == name || spec.short_name == name)
            out.push_back(spec.key);
    }
    return out;
}

LaunchOptions parse(std::vector<std::string> args, ptrun::env::EnvMap env = {}) {
    args.push_back("train");
    auto result = parse_command_line(args, env);
    REQUIRE(std::holds_alternative<LaunchOptions>(result));
    return std::get<LaunchOptions>(result);
}

}  // namespace

TEST_CASE("option table: every enumerator has exactly one row, in order", "[launcher][option]") {
    REQUIRE(option_table().size() == kOptionCount);
    for (std::size_t i = 0; i < kOptionCount; ++i) {
        const auto key = static_cast<Option>(i);
        INFO("enumerator " << i);
        std::size_t rows = 0;
        for (const auto& spec : option_table()) rows += spec.key == key ? 1 : 0;
        CHECK(rows == 1);
        CHECK(option_table()[i].key == key);
        CHECK(option_spec(key).key == key);
    }
}

TEST_CASE("option table: spellings are unique and map back to their key", "[launcher][option]") {
    std::set<std::string_view> pets;
    for (const auto& spec : option_table()) {
        INFO("option " << spec.dashed);
        CHECK_FALSE(spec.dashed.empty());
        CHECK_FALSE(spec.help.empty());
        CHECK(keys_spelled(spec.dashed) == std::vector<Option>{spec.key});
        CHECK(keys_spelled(spec.underscored) == std::vector<Option>{spec.key});
        if (!spec.short_name.empty())
            CHECK(keys_spelled(spec.short_name) == std::vector<Option>{spec.key});
        CHECK(pets.insert(spec.pet).second);
        CHECK(option_name(spec.key) == spec.dashed);
        CHECK(flag_text(spec.key) == "--" + std::string(spec.dashed));
    }
}

TEST_CASE("option table: underscored and PET_ names derive from the dashed name",
          "[launcher][option]") {
    for (const auto& spec : option_table()) {
        INFO("option " << spec.dashed);
        std::string underscored(spec.dashed), pet = "PET_";
        for (auto& c : underscored) c = c == '-' ? '_' : c;
        for (char c : underscored) pet += static_cast<char>(std::toupper(c));
        CHECK(spec.underscored == underscored);
        CHECK(spec.pet == pet);
        CHECK(spec.dashed.find('_') == std::string_view::npos);
        if (spec.kind == OptionKind::Flag) CHECK(spec.fallback.empty());  // off unless given
    }
}

TEST_CASE("option table: LaunchOptions starts at every default", "[launcher][option]") {
    LaunchOptions o;
    for (const auto& spec : option_table()) {
        INFO("option " << spec.dashed);
        CHECK(o.at(spec.key).value == spec.fallback);
        CHECK(o.at(spec.key).source == Source::Default);
        CHECK(o.at(spec.key).origin.empty());
    }
}

TEST_CASE("option table drives the parser: both spellings and PET_ for every option",
          "[launcher][option][cli]") {
    for (const auto& spec : option_table()) {
        INFO("option " << spec.dashed);
        const bool is_flag = spec.kind == OptionKind::Flag;
        const std::string value = is_flag ? "1" : "v";
        for (auto name : {spec.dashed, spec.underscored}) {
            std::vector<std::string> args{"--" + std::string(name)};
            if (!is_flag) args.push_back(value);
            auto o = parse(args);
            CHECK(o.at(spec.key).value == value);
            CHECK(o.at(spec.key).source == Source::Flag);
        }
        auto from_env = parse({}, {{std::string(spec.pet), value}});
        CHECK(from_env.at(spec.key).value == value);
        CHECK(from_env.at(spec.key).source == Source::PetEnv);
    }
}

TEST_CASE("option table: --help lists every option with its PET_ variable",
          "[launcher][option][cli]") {
    auto help = std::get<InfoRequest>(parse_command_line({"--help"}, {})).text;
    for (const auto& spec : option_table()) {
        INFO("option " << spec.dashed);
        CHECK_THAT(help, Catch::Contains("--" + std::string(spec.dashed)));
        CHECK_THAT(help, Catch::Contains("--" + std::string(spec.underscored)));
        if (spec.key == Option::Explain) continue;
        const auto also = torch_env_fallback(spec.key);  // torchrun's own, after the PET_ one
        CHECK_THAT(help, Catch::Contains("[env " + std::string(spec.pet) +
                                         (also.empty() ? "" : ", " + std::string(also)) + "]"));
    }
}

TEST_CASE("LaunchOptions::given: a flag, a PET_ variable or SLURM, never the default",
          "[launcher][option]") {
    const auto o = parse({"--nnodes", "2"}, {{"PET_MAX_RESTARTS", "3"}});
    CHECK(o.given(Option::Nnodes));
    CHECK(o.given(Option::MaxRestarts));
    CHECK_FALSE(o.given(Option::NodeRank));
    LaunchOptions filled;
    filled.at(Option::RdzvId) = RawValue{"slurm-1.0", Source::Slurm, "SLURM_JOB_ID"};
    CHECK(filled.given(Option::RdzvId));
    CHECK_FALSE(filled.given(Option::RdzvBackend));
}
