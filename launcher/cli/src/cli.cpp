#include "ptrun/launcher/cli/cli.hpp"

#include <array>

#include "cli11.hpp"  // before anything that could include <iostream>
#include "ptrun/launcher/cli/completion_script.hpp"
#include "ptrun/launcher/cli/info_option.hpp"
#include "ptrun/launcher/cli/option_prefix.hpp"
#include "ptrun/launcher/cli/plain_command_line.hpp"
#include "ptrun/launcher/cli/usage_error.hpp"
#include "ptrun/launcher/cli/version.hpp"

namespace ptrun::launcher {
namespace {

/// What --version prints.
std::string version_line() { return "ptrun " + std::string(kVersion) + "\n"; }

/// CLI11's names for `spec`: "-m,--module", "--nproc-per-node,--nproc_per_node".
std::string flag_names(const OptionSpec& spec) {
    std::string names;
    if (!spec.short_name.empty()) names += std::string(spec.short_name) + ",";
    names += "--" + std::string(spec.dashed);
    if (spec.underscored != spec.dashed) names += ",--" + std::string(spec.underscored);
    return names;
}

/// --help's text for `spec`, naming its PET_ fallback (and torchrun's other variable).
std::string help_text(const OptionSpec& spec) {
    std::string text(spec.help);
    if (spec.key == Option::Explain) return text;
    text += " [env " + std::string(spec.pet);
    if (auto also = torch_env_fallback(spec.key); !also.empty()) text += ", " + std::string(also);
    return text + "]";
    return text;
}

/// CLI11's help with ptrun's real usage line (CLI11 would print only "ptrun [OPTIONS]").
class UsageFormatter : public CLI::Formatter {
  public:
    std::string make_usage(const CLI::App*, std::string name) const override {
        return "Usage: " + name + " [OPTIONS] PROGRAM [ARGS...]\n       " + name +
               " status HOST:PORT   (a running ptrun's --health-port, as a table)\n";
    }
};

/// LaunchOptions from what the command line gave (`given`, `rest`: the words from PROGRAM on,
/// or from `--`), each option not given falling back to its PET_ variable (then torchrun's other
/// one) in `env`. Throws UsageError for a missing PROGRAM or an unknown option before it.
LaunchOptions launch_options(const GivenOptions& given, std::vector<std::string> rest,
                             const env::EnvMap& env) {
    LaunchOptions out;  // every option at its default
    for (const auto& spec : option_table()) {
        const auto i = static_cast<std::size_t>(spec.key);
        if (given.values[i]) {
            out.at(spec.key) = {*given.values[i], Source::Flag, {}};
        } else if (auto it = env.find(spec.pet); it != env.end()) {
            out.at(spec.key) = {it->second, Source::PetEnv, std::string(spec.pet)};
        } else if (auto also = torch_env_fallback(spec.key); !also.empty()) {
            if (auto found = env.find(std::string(also)); found != env.end())
                out.at(spec.key) = {found->second, Source::PetEnv, std::string(also)};
        }
    }
    if (rest.empty()) {
        if (out.flag(Option::Explain)) return out;
        throw UsageError(
            "missing PROGRAM: expected ptrun [OPTIONS] PROGRAM [ARGS...] (see ptrun --help)");
    }
    if (rest.front().size() > 1 && rest.front()[0] == '-') {
        if (auto meant = closest_option(rest.front())) {
            throw UsageError("unknown option '" + rest.front() + "': did you mean " + *meant +
                             "? (see ptrun --help)");
        }
        throw UsageError("unknown option '" + rest.front() +
                         "': expected a torchrun option before PROGRAM (see ptrun --help)");
    }
    out.program = rest.front();
    out.program_args.assign(rest.begin() + 1, rest.end());
    return out;
}

}  // namespace

std::variant<LaunchOptions, InfoRequest> parse_command_line(const std::vector<std::string>& args,
                                                            const env::EnvMap& env) {
    const auto whole = expand_option_prefixes(args);  // --nproc_per_nod=2, as torchrun takes it
    if (whole.size() == 1 &&
        whole[0] == "--" + std::string(info_option_spec(InfoOption::Version).dashed)) {
        return InfoRequest{version_line()};  // as scripts ask it: no option table to build
    }
    if (auto plain = parse_plain_command_line(whole)) {
        return launch_options(*plain, std::move(plain->rest), env);
    }
    return parse_command_line_with_cli11(whole, env);
}

std::variant<LaunchOptions, InfoRequest> parse_command_line_with_cli11(
    const std::vector<std::string>& whole, const env::EnvMap& env) {
    cli11_streams();
    CLI::App app{
        "ptrun [OPTIONS] PROGRAM [ARGS...]: a fast, torchrun-compatible launcher for distributed "
        "training",
        "ptrun"};
    app.prefix_command();
    app.formatter(std::make_shared<UsageFormatter>());
    app.footer(
        "Everything after PROGRAM goes to the workers untouched; `--` may end ptrun's options. "
        "A flag given twice takes its last value. A .py PROGRAM runs as python3 -u PROGRAM "
        "($PYTHON_EXEC chooses the interpreter) unless --no-python. A worker reading the terminal "
        "(pdb, input()) is lent it.\nSee man ptrun for the worker environment, exit codes, logs "
        "and debuggers.");
    const auto& help_flag = info_option_spec(InfoOption::Help);
    app.set_help_flag(std::string(help_flag.short_name) + ",--" + std::string(help_flag.dashed),
                      std::string(help_flag.help));
    bool want_version = false;
    const auto& version = info_option_spec(InfoOption::Version);
    app.add_flag("--" + std::string(version.dashed), want_version, std::string(version.help));
    std::string completion_shell;
    const auto& completion = info_option_spec(InfoOption::PrintCompletion);
    auto* print_completion = app.add_option("--" + std::string(completion.dashed), completion_shell,
                                            std::string(completion.help))
                                 ->option_text("SHELL");

    std::array<std::string, kOptionCount> values;
    std::array<CLI::Option*, kOptionCount> handles{};
    for (const auto& spec : option_table()) {
        const auto i = static_cast<std::size_t>(spec.key);
        std::string names = flag_names(spec);
        std::string help = help_text(spec);
        const bool is_flag = spec.kind == OptionKind::Flag;
        auto* opt = is_flag ? app.add_flag(names)->description(help)
                            : app.add_option(names, values[i], help);
        // Given twice, the last value wins, as in torchrun (wrapper scripts append overrides).
        opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        if (!is_flag && !spec.fallback.empty()) opt->default_str(std::string(spec.fallback));
        handles[i] = opt;
    }

    std::vector<std::string> reversed(whole.rbegin(), whole.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
        return InfoRequest{app.help()};
    } catch (const CLI::ParseError& e) {
        throw UsageError(e.what());
    }
    if (want_version) return InfoRequest{version_line()};
    if (print_completion->count() > 0) return InfoRequest{completion_script(completion_shell)};

    GivenOptions given;
    for (const auto& spec : option_table()) {
        const auto i = static_cast<std::size_t>(spec.key);
        if (handles[i]->count() > 0) {
            given.values[i] = spec.kind == OptionKind::Flag ? "1" : values[i];
        }
    }
    auto rest = app.remaining();
    if (!rest.empty() && rest.front() == "--")
        rest.erase(rest.begin());  // ptrun [OPTIONS] -- PROGRAM
    return launch_options(given, std::move(rest), env);
}

}  // namespace ptrun::launcher
