#include "ptrun/launcher/cli/cli.hpp"

#include <catch2/catch.hpp>

#include "ptrun/launcher/cli/usage_error.hpp"

using namespace ptrun::launcher;

namespace {

LaunchOptions parse(std::vector<std::string> args, ptrun::env::EnvMap env = {}) {
    auto result = parse_command_line(args, env);
    REQUIRE(std::holds_alternative<LaunchOptions>(result));
    return std::get<LaunchOptions>(result);
}

}  // namespace

TEST_CASE("cli accepts both spellings of every option", "[launcher][cli]") {
    auto dashed = parse({"--nproc-per-node", "4", "--max-restarts=2", "train"});
    auto underscored = parse({"--nproc_per_node", "4", "--max_restarts=2", "train"});
    CHECK(dashed.at(Option::NprocPerNode).value == "4");
    CHECK(underscored.at(Option::NprocPerNode).value == "4");
    CHECK(underscored.at(Option::MaxRestarts).value == "2");
    CHECK(underscored.at(Option::MaxRestarts).source == Source::Flag);
}

TEST_CASE("cli leaves everything after the program to the worker", "[launcher][cli]") {
    auto o = parse({"--standalone", "train", "--nproc-per-node", "9", "-m", "--", "x"});
    CHECK(o.program == "train");
    CHECK(o.program_args == std::vector<std::string>{"--nproc-per-node", "9", "-m", "--", "x"});
    CHECK(o.at(Option::NprocPerNode).value == "1");
    CHECK(o.flag(Option::Standalone));
}

TEST_CASE("cli falls back to PET_ variables, then defaults", "[launcher][cli]") {
    auto o = parse({"train"},
                   {{"PET_NNODES", "1:1"}, {"PET_NPROC_PER_NODE", "3"}, {"PET_STANDALONE", "1"}});
    CHECK(o.at(Option::NprocPerNode).value == "3");
    CHECK(o.at(Option::NprocPerNode).source == Source::PetEnv);
    CHECK(o.flag(Option::Standalone));
    CHECK(o.at(Option::RdzvBackend).value == "static");
    CHECK(o.at(Option::RdzvBackend).source == Source::Default);
    CHECK(option_spec(Option::NprocPerNode).pet == "PET_NPROC_PER_NODE");
}

TEST_CASE("cli reads torchrun's other variables after the PET_ ones", "[launcher][cli]") {
    // #37.5: TORCH_ELASTIC_SHUTDOWN_TIMEOUT (torchrun 2.x's --shutdown-timeout fallback) and
    // TORCHELASTIC_HEALTH_CHECK_PORT.
    auto o = parse({"train"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"},
                               {"TORCHELASTIC_HEALTH_CHECK_PORT", "9000"}});
    CHECK(o.at(Option::ShutdownTimeout).value == "7");
    CHECK(o.at(Option::ShutdownTimeout).origin == "TORCH_ELASTIC_SHUTDOWN_TIMEOUT");
    CHECK(as_given(Option::ShutdownTimeout, o.at(Option::ShutdownTimeout)) ==
          "--shutdown-timeout '7' (from TORCH_ELASTIC_SHUTDOWN_TIMEOUT)");
    CHECK(o.at(Option::HealthPort).value == "9000");
    o = parse({"train"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"}, {"PET_SHUTDOWN_TIMEOUT", "8"}});
    CHECK(o.at(Option::ShutdownTimeout).value == "8");  // PET_ first
    o = parse({"--shutdown-timeout", "9", "train"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "7"}});
    CHECK(o.at(Option::ShutdownTimeout).value == "9");  // a flag always wins
}

TEST_CASE("cli short options -m, -r and -t", "[launcher][cli]") {
    auto o = parse({"-m", "-r", "3", "-t", "0:1", "pkg.train"});
    CHECK(o.flag(Option::Module));
    CHECK(o.at(Option::Redirects).value == "3");
    CHECK(o.at(Option::Tee).value == "0:1");
    CHECK(o.program == "pkg.train");
}

TEST_CASE("cli takes unique prefixes of long options, as argparse does", "[launcher][cli]") {
    // torchrun (argparse) takes --nproc_per_nod=2; ptrun refused it (issue 35.19).
    auto o = parse({"--nproc_per_nod=2", "--max-rest", "3", "--stand", "--rdzv-i", "job", "train",
                    "--nproc", "x"});
    CHECK(o.at(Option::NprocPerNode).value == "2");
    CHECK(o.at(Option::MaxRestarts).value == "3");
    CHECK(o.flag(Option::Standalone));
    CHECK(o.at(Option::RdzvId).value == "job");
    CHECK(o.program == "train");
    CHECK(o.program_args == std::vector<std::string>{"--nproc", "x"});  // the worker's, untouched
    // Both spellings of one option are one candidate; a value is never read as an option.
    CHECK(parse({"--nproc", "4", "-r", "--nnodes", "train"}).at(Option::NprocPerNode).value == "4");
    CHECK_THROWS_WITH(parse_command_line({"--rdzv", "x", "train"}, {}),
                      "ambiguous option '--rdzv': could match --rdzv-backend, --rdzv-endpoint, "
                      "--rdzv-id, --rdzv-conf (see ptrun --help)");
    CHECK_THROWS_WITH(parse_command_line({"--n=2", "train"}, {}),
                      Catch::Contains("ambiguous option '--n': could match --nnodes, "
                                      "--nproc-per-node, --node-rank, --no-python"));
    CHECK(std::holds_alternative<InfoRequest>(parse_command_line({"--vers"}, {})));
}

TEST_CASE("cli suggests the option a mistyped one meant", "[launcher][cli]") {
    CHECK_THROWS_WITH(parse_command_line({"--nproc-per-nodes", "2", "train"}, {}),
                      "unknown option '--nproc-per-nodes': did you mean --nproc-per-node? (see "
                      "ptrun --help)");
    CHECK(closest_option("--nproc_per_nod=2") == "--nproc-per-node");
    CHECK(closest_option("--max-restars") == "--max-restarts");
    CHECK(closest_option("--nnode") == "--nnodes");
    CHECK(closest_option("--rdzv_endpont") == "--rdzv-endpoint");
    CHECK(closest_option("--hang-timeou") == "--hang-timeout");
    CHECK(closest_option("--numa") == "--numa-binding");  // the one option it begins
    CHECK_FALSE(closest_option("--rdzv"));                // begins several: no guess
    CHECK_FALSE(closest_option("--frobnicate"));
    CHECK_FALSE(closest_option("-x"));
    CHECK_THROWS_WITH(parse_command_line({"--frobnicate", "train"}, {}),
                      "unknown option '--frobnicate': expected a torchrun option before PROGRAM "
                      "(see ptrun --help)");
}

TEST_CASE("cli rejects unknown options and a missing program", "[launcher][cli]") {
    CHECK_THROWS_AS(parse_command_line({"--frobnicate", "train"}, {}), UsageError);
    CHECK_THROWS_WITH(parse_command_line({"--nproc-per-node", "2"}, {}),
                      Catch::Contains("missing PROGRAM"));
    CHECK_THROWS_AS(parse_command_line({"--nproc-per-node"}, {}), UsageError);
}

TEST_CASE("cli answers --help and --version", "[launcher][cli]") {
    auto help = parse_command_line({"--help"}, {});
    REQUIRE(std::holds_alternative<InfoRequest>(help));
    CHECK_THAT(std::get<InfoRequest>(help).text,
               Catch::Contains("--rdzv-endpoint,--rdzv_endpoint"));
    auto version = parse_command_line({"--version"}, {});
    CHECK_THAT(std::get<InfoRequest>(version).text, Catch::StartsWith("ptrun "));
    // Alone it is answered without CLI11, and as CLI11 answers it beside other options.
    auto among = parse_command_line({"--nproc-per-node", "2", "--version"}, {});
    CHECK(std::get<InfoRequest>(among).text == std::get<InfoRequest>(version).text);
    auto full = parse_command_line_with_cli11({"--version"}, {});
    CHECK(std::get<InfoRequest>(full).text == std::get<InfoRequest>(version).text);
}
