#include "ptrun/launcher/output/line_prefix_template.hpp"

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <string>

#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/output/console_stream.hpp"
#include "ptrun/launcher/output/output_relay.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

using namespace ptrun::launcher;
using Catch::Matchers::Contains;

namespace {

LinePrefixFields worker() {
    LinePrefixFields f;
    f.role_name = "trainer";
    f.rank = 5;
    f.local_rank = 1;
    f.pid = 4242;
    f.hostname = "node7";
    return f;
}

std::string expanded(std::string_view text) {
    return LinePrefixTemplate::parse(text).expand(worker());
}

LaunchConfig config_for(std::vector<std::string> args, ptrun::env::EnvMap env = {}) {
    args.push_back("train");
    return resolve(std::get<LaunchOptions>(parse_command_line(args, env)), HostFacts{});
}

std::string refusal(std::string_view text) {
    try {
        (void)LinePrefixTemplate::parse(text);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "(accepted)";
}

}  // namespace

TEST_CASE("line prefix templates expand torchrun's three macros as string.Template does",
          "[launcher][prefix]") {
    CHECK(expanded("[${role_name}${local_rank}]:") == "[trainer1]:");  // torchrun's default shape
    CHECK(expanded("[${rank}]:") == "[5]:");  // torchrun's documented example
    CHECK(expanded("$rank|$local_rank|$role_name ") == "5|1|trainer ");
    CHECK(expanded("${rank}${rank}") == "55");
    CHECK(expanded("$rank:") == "5:");  // $name takes the longest identifier: ':' ends it
}

TEST_CASE("line prefix templates expand ptrun's pid and hostname", "[launcher][prefix]") {
    CHECK(expanded("[${hostname}:${pid}] ") == "[node7:4242] ");
    CHECK(expanded("$hostname/$pid") == "node7/4242");
    auto before_start = worker();
    before_start.pid.reset();
    CHECK(LinePrefixTemplate::parse("${pid}|").expand(before_start) == "?|");
}

TEST_CASE("line prefix templates keep literal text and '$$' as one '$'", "[launcher][prefix]") {
    CHECK(expanded("") == "");
    CHECK(expanded("plain > ") == "plain > ");
    CHECK(expanded("$$rank") == "$rank");
    CHECK(expanded("cost $$5 ${rank}") == "cost $5 5");
    CHECK(LinePrefixTemplate::parse("a${rank}b").text() == "a${rank}b");
}

TEST_CASE("line prefix templates say whether they need the worker's pid", "[launcher][prefix]") {
    CHECK(LinePrefixTemplate::parse("[${pid}]").uses_pid());
    CHECK(LinePrefixTemplate::parse("$pid").uses_pid());
    CHECK_FALSE(LinePrefixTemplate::parse("[${rank}] $$pid").uses_pid());
}

TEST_CASE("line prefix templates refuse an unknown macro, naming it", "[launcher][prefix]") {
    CHECK_THAT(refusal("[${foo}]"), Contains("unknown macro ${foo}") && Contains("${local_rank}"));
    CHECK_THAT(refusal("$ranks"), Contains("unknown macro $ranks"));
    CHECK_THAT(refusal("${Rank}"), Contains("unknown macro ${Rank}"));  // names are exact
    CHECK_THAT(refusal("${role}"), Contains("unknown macro ${role}"));
}

TEST_CASE("line prefix templates refuse a '$' that starts no macro, with its position",
          "[launcher][prefix]") {
    CHECK_THAT(refusal("rank$"), Contains("'$' at character 5 starts no macro"));
    CHECK_THAT(refusal("${rank"), Contains("'$' at character 1"));
    CHECK_THAT(refusal("${}"), Contains("'$' at character 1"));
    CHECK_THAT(refusal("a $1"), Contains("'$' at character 3"));
    CHECK_THAT(refusal("${ rank}"), Contains("starts no macro"));
}

TEST_CASE("a relay made to wait for its prefix reads nothing until it has one",
          "[launcher][prefix][relay]") {
    boost::asio::io_context io;
    int to_relay[2];
    int console_pipe[2];
    REQUIRE(::pipe(to_relay) == 0);
    REQUIRE(::pipe(console_pipe) == 0);
    {
        ConsoleStream console(console_pipe[1], "test");
        RelayTarget target;
        target.console = &console;
        target.prefix = "[?] ";
        target.wait_for_prefix = true;
        OutputRelay relay(io, to_relay[0], std::move(target));
        REQUIRE(::write(to_relay[1], "early\n", 6) == 6);
        io.poll();  // not started: the line stays in the pipe
        relay.begin("[4242] ", "");
        REQUIRE(::write(to_relay[1], "late\n", 5) == 5);
        ::close(to_relay[1]);
        io.restart();  // poll() ran out of work
        io.run();
        relay.drain();
        console.flush(std::chrono::seconds(1));
    }
    ::close(console_pipe[1]);
    std::string seen;
    char buf[256];
    for (ssize_t n; (n = ::read(console_pipe[0], buf, sizeof buf)) > 0;)
        seen.append(buf, static_cast<std::size_t>(n));
    ::close(console_pipe[0]);
    CHECK(seen == "[4242] early\n[4242] late\n");
}

TEST_CASE("the prefix template comes from either spelling, PET_ or torchrun's variable",
          "[launcher][prefix][config]") {
    CHECK_FALSE(config_for({}).log_line_prefix);
    CHECK(config_for({"--log-line-prefix-template", "[${rank}]:"}).log_line_prefix->text() ==
          "[${rank}]:");
    CHECK(config_for({"--log_line_prefix_template=${pid}"}).log_line_prefix->uses_pid());
    CHECK(config_for({}, {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "t$rank"}})
              .log_line_prefix->text() == "t$rank");
    CHECK(config_for({}, {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "t"},
                          {"PET_LOG_LINE_PREFIX_TEMPLATE", "p"}})
              .log_line_prefix->text() == "p");
    CHECK(config_for({"--log-line-prefix-template", "f"},
                     {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "t"}})
              .log_line_prefix->text() == "f");
    // Empty is unset, as torchrun's `if self._log_line_prefix_template:`.
    CHECK_FALSE(config_for({}, {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", ""}}).log_line_prefix);
}

TEST_CASE("a bad prefix template is a usage error naming the option, variable and macro",
          "[launcher][prefix][config]") {
    CHECK_THROWS_WITH(config_for({"--log-line-prefix-template", "[${foo}]"}),
                      Contains("--log-line-prefix-template '[${foo}]': unknown macro ${foo}"));
    CHECK_THROWS_WITH(config_for({}, {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "$"}}),
                      Contains("(from TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE): the '$' at "
                               "character 1 starts no macro"));
}
