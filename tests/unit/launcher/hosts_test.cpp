// --hosts/--hostfile: the host list grammar, the filters, the remote command's quoting and the
// plan each host's ptrun is started with (launcher/hosts/).
#include <catch2/catch.hpp>

#include "ptrun/launcher/cli/cli.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/hosts/host_launch.hpp"
#include "ptrun/launcher/hosts/host_lines.hpp"
#include "ptrun/launcher/hosts/host_list.hpp"
#include "ptrun/launcher/hosts/remote_command.hpp"
#include "ptrun/launcher/hosts/remote_env.hpp"
#include "ptrun/launcher/plan/host_facts.hpp"
#include "ptrun/launcher/plan/launch_config.hpp"

using namespace ptrun::launcher;
using Catch::Contains;

namespace {

/// What a POSIX shell makes of `line`: its words, as `sh -c 'printf "%s\0" LINE'` prints them.
std::vector<std::string> shell_words(const std::string& line) {
    const std::string command = "printf '%s\\0' " + line;
    const std::string run = "sh -c " + shell_quote(command);
    FILE* p = ::popen(run.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string out;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    REQUIRE(::pclose(p) == 0);
    std::vector<std::string> words;
    std::size_t start = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (out[i] == '\0') {
            words.push_back(out.substr(start, i - start));
            start = i + 1;
        }
    }
    return words;
}

LaunchOptions options_of(std::vector<std::string> args) {
    auto parsed = parse_command_line(args, {});
    REQUIRE(std::holds_alternative<LaunchOptions>(parsed));
    return std::get<LaunchOptions>(parsed);
}

}  // namespace

TEST_CASE("host list (--hosts): names with optional slots, in order", "[launcher][hosts]") {
    auto hosts = parse_host_list("node1,node2:4,me@node-3.example_x:2");
    REQUIRE(hosts.size() == 3);
    CHECK(hosts[0].host == "node1");
    CHECK_FALSE(hosts[0].slots);
    CHECK(*hosts[1].slots == 4);
    CHECK(hosts[2].host == "me@node-3.example_x");
    CHECK(hosts[2].name() == "node-3.example_x");
}

TEST_CASE("host list (--hosts): hostile names and slots are refused, naming the entry",
          "[launcher][hosts]") {
    for (const char* bad : {"a b",  "a;reboot", "$(touch x)", "`id`",  "-oProxyCommand=x",
                            ".x",   "a|b",      "a&b",        "a>b",   "a'b",
                            "a\"b", "a\\b",     "a\nb",       "@node", "u@",
                            "a,,b", "",         ",a",         "a:",    "a:0",
                            "a:-1", "a:x",      "a:1025",     "a:1:2", "u@v@w",
                            "a*"}) {
        INFO(bad);
        CHECK_THROWS_AS(parse_host_list(bad), UsageError);
    }
    CHECK_THROWS_WITH(parse_host_list("ok,a;b"), Contains("'a;b'") && Contains("not a host name"));
    CHECK_THROWS_WITH(parse_host_list("a:0"), Contains("SLOTS from 1 to 1024"));
    CHECK_THROWS_WITH(parse_host_list("a,b,a:2"), Contains("listed twice"));
}

TEST_CASE("host list (--hosts): 10,000 hosts are refused with the cap and why",
          "[launcher][hosts]") {
    std::string list;
    for (int i = 0; i < 10'000; ++i) list += (i ? ",h" : "h") + std::to_string(i);
    CHECK_THROWS_WITH(parse_host_list(list), Contains("at most 4096") && Contains("descriptors"));
    std::string file;
    for (int i = 0; i < 10'000; ++i) file += "h" + std::to_string(i) + " slots=1\n";
    CHECK_THROWS_WITH(parse_hostfile(file, "hf"), Contains("at most 4096"));
    std::string ok;
    for (int i = 0; i < 4096; ++i) ok += (i ? ",h" : "h") + std::to_string(i);
    CHECK(parse_host_list(ok).size() == 4096);
}

TEST_CASE("hostfile: DeepSpeed's and Open MPI's shared syntax", "[launcher][hosts]") {
    auto hosts = parse_hostfile(
        "# the cluster\n"
        "worker-1 slots=4\n"
        "\n"
        "  worker-2\tslots=2   # two GPUs\n"
        "worker-3\r\n",
        "/tmp/hf");
    REQUIRE(hosts.size() == 3);
    CHECK(hosts[0].host == "worker-1");
    CHECK(*hosts[0].slots == 4);
    CHECK(*hosts[1].slots == 2);
    CHECK_FALSE(hosts[2].slots);
}

TEST_CASE("hostfile: malformed lines are refused with the file and line", "[launcher][hosts]") {
    CHECK_THROWS_WITH(parse_hostfile("a\nb slot=2\n", "hf"),
                      Contains("--hostfile 'hf' line 2") && Contains("'slot=2'"));
    CHECK_THROWS_WITH(parse_hostfile("a slots=2 slots=3\n", "hf"), Contains("line 1"));
    CHECK_THROWS_WITH(parse_hostfile("a slots=0\n", "hf"), Contains("N from 1 to 1024"));
    CHECK_THROWS_WITH(parse_hostfile("$(reboot) slots=1\n", "hf"), Contains("not a host name"));
    CHECK_THROWS_WITH(parse_hostfile("a;b\n", "hf"), Contains("not a host name"));
    CHECK_THROWS_WITH(parse_hostfile("# nothing\n\n", "hf"), Contains("names no host"));
    CHECK_THROWS_WITH(parse_hostfile("a\na slots=2\n", "hf"), Contains("listed twice"));
    CHECK_THROWS_WITH(parse_hostfile(std::string("a\0b\n", 4), "hf"), Contains("not a host name"));
}

TEST_CASE("host selection (--include, --exclude): hosts and slots, as DeepSpeed's runner",
          "[launcher][hosts]") {
    const auto all = parse_host_list("a:4,b:4,c:2,d");
    auto only = filter_hosts(all, "c@a:2", "");
    REQUIRE(only.size() == 2);
    CHECK(only[0].host == "c");
    CHECK(*only[1].slots == 2);
    auto rest = filter_hosts(all, "", "b,a:1,c:2");
    REQUIRE(rest.size() == 2);
    CHECK(rest[0].host == "a");
    CHECK(*rest[0].slots == 3);
    CHECK(rest[1].host == "d");
    CHECK_THROWS_WITH(filter_hosts(all, "x", ""), Contains("'x' is not in the host list"));
    CHECK_THROWS_WITH(filter_hosts(all, "a:5", ""), Contains("has 4 slots"));
    CHECK_THROWS_WITH(filter_hosts(all, "", "d:1"), Contains("no slots"));
    CHECK_THROWS_WITH(filter_hosts(all, "", "a,b,c,d"), Contains("no host"));
    CHECK_THROWS_WITH(filter_hosts(all, "a;b", ""), Contains("not a host name"));
}

TEST_CASE("shell_quote: any text is one word to a POSIX shell, expanded never",
          "[launcher][hosts]") {
    const std::vector<std::string> hostile{
        "plain",   "",     "a b",  "it's",  "'",  "''",   "$(touch /tmp/ptrun-pwned)",
        "`id`",    "a;b",  "a&&b", "$HOME", "\\", "\"",   "*",
        "~",       "a\nb", "-n",   "!x",    "#x", "a\tb", "{a,b}",
        "\x01\x7f"};
    std::string line;
    for (const auto& w : hostile) line += shell_quote(w) + " ";
    CHECK(shell_words(line) == hostile);
}

TEST_CASE("remote command: cd, env and argv, each word quoted", "[launcher][hosts]") {
    RemoteAgentCommand c;
    c.directory = "/work/my dir";
    c.env = {{"PET_X", "1"}, {"A", "$(x) y"}};
    c.argv = {"/opt/ptrun", "--nnodes=3", "train.py", "--msg", "a;b $(c)"};
    const auto line = remote_command_line(c);
    CHECK(line ==
          "cd -- '/work/my dir' && exec env 'PET_X=1' 'A=$(x) y' '/opt/ptrun' '--nnodes=3' "
          "'train.py' '--msg' 'a;b $(c)'");
    RemoteAgentCommand bare;
    bare.directory = "/";
    bare.argv = {"ptrun"};
    CHECK(remote_command_line(bare) == "cd -- '/' && exec 'ptrun'");
}

TEST_CASE("remote shell (--remote-shell): split into words without a shell", "[launcher][hosts]") {
    CHECK(split_command_words("ssh -o BatchMode=yes") ==
          std::vector<std::string>{"ssh", "-o", "BatchMode=yes"});
    CHECK(split_command_words("ssh -F '/tmp/a dir/cfg' -o \"X=a \\\"b\\\"\" $HOME") ==
          std::vector<std::string>{"ssh", "-F", "/tmp/a dir/cfg", "-o", "X=a \"b\"", "$HOME"});
    CHECK(split_command_words("a\\ b ''") == std::vector<std::string>{"a b", ""});
    CHECK_THROWS_WITH(split_command_words("ssh 'x"), Contains("unterminated"));
    CHECK_THROWS_WITH(split_command_words("   "), Contains("expected a command"));
    CHECK(remote_shell_argv({"ssh"}, "h", "cmd") == std::vector<std::string>{"ssh", "h", "cmd"});
}

TEST_CASE(".ptrun_env and --export: what every host gets", "[launcher][hosts]") {
    auto file = parse_env_file("# comment\nNCCL_DEBUG=INFO\n\nPATH_X=a=b c\r\n", ".ptrun_env");
    REQUIRE(file.size() == 2);
    CHECK(file[1] == std::pair<std::string, std::string>{"PATH_X", "a=b c"});
    CHECK_THROWS_WITH(parse_env_file("OK=1\nexport X=1\n", "/d/.ptrun_env"),
                      Contains("/d/.ptrun_env line 2") && Contains("NAME=VALUE"));
    CHECK_THROWS_WITH(parse_env_file("1X=1\n", "f"), Contains("line 1"));
    ptrun::env::EnvMap env{
        {"PET_MAX_RESTARTS", "2"}, {"PET_HOSTS", "a,b"}, {"FOO", "x y"}, {"HOME", "/root"}};
    auto got = remote_env(env, "FOO", file);
    REQUIRE(got.size() == 4);
    CHECK(got[0].first == "PET_MAX_RESTARTS");  // PET_HOSTS stays: it would make a launcher
    CHECK(got[1] == std::pair<std::string, std::string>{"FOO", "x y"});
    CHECK_THROWS_WITH(remote_env(env, "NOPE", {}), Contains("NOPE is not set here"));
    CHECK_THROWS_WITH(remote_env(env, "A;B", {}), Contains("not a variable name"));
}

TEST_CASE("hosts plan: node ranks in host order, slots, rendezvous at the first host",
          "[launcher][hosts]") {
    auto options = options_of({"--hosts", "node1,node2:4,node3", "--nproc-per-node", "2",
                               "--max-restarts", "1", "train.py", "--x", "a b"});
    HostsContext context{"/work", "/opt/ptrun", {{"PET_A", "1"}}, "hosts-1234"};
    auto plan = make_hosts_plan(options, selected_hosts(options, ""), context);
    REQUIRE(plan.hosts.size() == 3);
    CHECK(plan.endpoint == "node1");
    CHECK(plan.run_id == "hosts-1234");
    CHECK(plan.hosts[1].name == "node2");
    const auto& argv = plan.hosts[1].argv;
    REQUIRE(argv.size() == 5);
    CHECK(argv[0] == "ssh");
    CHECK(argv[3] == "node2");
    const auto words = shell_words(argv[4].substr(argv[4].find("&& exec ") + 8));
    CHECK(words == std::vector<std::string>{
                       "env", "PET_A=1", "/opt/ptrun", "--from-launcher=node2",
                       "--nproc-per-node=2", "--max-restarts=1", "--rdzv-backend=c10d", "--tee=3",
                       "--rdzv-endpoint=node1", "--rdzv-id=hosts-1234", "--nnodes=3",
                       "--node-rank=1", "--nproc-per-node=4", "--", "train.py", "--x", "a b"});
    CHECK(argv[4].rfind("cd -- '/work' && exec ", 0) == 0);
}

TEST_CASE("hosts plan: what --hosts sets itself is refused", "[launcher][hosts]") {
    HostsContext context{"/", "/p", {}, "id"};
    for (auto args :
         std::vector<std::vector<std::string>>{{"--hosts", "a", "--nnodes", "2", "t"},
                                               {"--hosts", "a", "--node-rank", "1", "t"},
                                               {"--hosts", "a", "--standalone", "t"},
                                               {"--hosts", "a", "--from-launcher", "a", "t"},
                                               {"--hosts", "a", "--remote-shell", "ssh 'x", "t"},
                                               {"--hosts", "a", "--remote-ptrun", "/a=b", "t"}}) {
        auto options = options_of(args);
        INFO(args[2]);
        CHECK_THROWS_AS(make_hosts_plan(options, selected_hosts(options, ""), context), UsageError);
    }
    CHECK_THROWS_WITH(selected_hosts(options_of({"--hosts", "a", "--hostfile", "f", "t"}), ""),
                      Contains("both given"));
    CHECK_THROWS_WITH(selected_hosts(options_of({"--include", "a", "t"}), ""),
                      Contains("expected --hosts or --hostfile"));
    CHECK(wants_hosts(options_of({"--include", "a", "t"})));
    CHECK_FALSE(wants_hosts(options_of({"--from-launcher", "a", "--hosts", "a", "t"})));
    CHECK_FALSE(wants_hosts(options_of({"t"})));
}

TEST_CASE("host lines: prefixed with the host unless its ptrun did", "[launcher][hosts]") {
    CHECK(host_line("node2", "hello") == "[node2] hello");
    CHECK(host_line("node2", "[node2:3] step 1") == "[node2:3] step 1");
    CHECK(host_line("node2", "[ptrun node2:77] info: x") == "[ptrun node2:77] info: x");
    CHECK(host_line("node2", "[node21:3] x") == "[node2] [node21:3] x");
    CHECK(host_line("node2", "") == "[node2] ");
}

TEST_CASE("line splitter: lines, a partial rest, long lines in pieces", "[launcher][hosts]") {
    LineSplitter s(8);
    CHECK(s.feed("ab\ncd") == std::vector<std::string>{"ab"});
    CHECK(s.feed("e\n\n") == std::vector<std::string>{"cde", ""});
    CHECK(s.feed("0123456789abcdefg") == std::vector<std::string>{"01234567", "89abcdef"});
    CHECK(s.rest() == "g");
    CHECK(s.rest().empty());
    CHECK(s.feed("01234567\nx\n") == std::vector<std::string>{"01234567", "x"});
}

TEST_CASE("a host's options against any host: device kinds pass, bad values do not",
          "[launcher][hosts]") {
    const auto any = any_host_facts();
    auto resolved = [&any](std::vector<std::string> args) {
        args.push_back("t");
        return resolve(options_of(args), any);
    };
    CHECK(resolved({"--nproc-per-node", "gpu"}).nproc_per_node == ptrun::env::kMaxCudaDevices);
    CHECK(resolved({"--nproc-per-node", "xpu:1,3"}).nproc_per_node == 2);
    CHECK(resolved({"--nproc-per-node", "hpu"}).device_kind == ptrun::env::DeviceKind::Gaudi);
    CHECK(resolved({"--nproc-per-node", "cpu", "--local-ranks-filter", "7"}).nproc_per_node > 7);
    CHECK(resolved({"--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "https://e1:2379",
                    "--rdzv-conf", "cacert=/nonexistent/ca.pem"})
              .etcd.endpoints.size() == 1);  // another host's file: not read here
    CHECK_THROWS_WITH(resolved({"--nproc-per-node", "x"}), Contains("--nproc-per-node 'x'"));
    CHECK_THROWS_WITH(resolved({"--max-restarts", "-1"}), Contains("--max-restarts '-1'"));
    CHECK_THROWS_WITH(resolved({"--nproc-per-node", "2", "--local-ranks-filter", "3"}),
                      Contains("--local-ranks-filter '3'"));
}
