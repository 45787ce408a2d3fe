#pragma once
/// The ptrun-store command line: flags bound into a plain options value (parsing apart from
/// running).

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "ptrun/rendezvous/tcp_store_server.hpp"

namespace ptrun::rdzv::cli {

/// What ptrun-store runs with: the server's options and the log level name.
struct StoreCommandLine {
    TcpStoreServerOptions server{};
    std::string log_level = "info";
};

/// --help or --version: text for stdout, exit 0.
struct InfoText {
    std::string text;
};

/// A flag was wrong; the message is one line naming the flag and the value.
class UsageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// Parses ptrun-store's arguments (without argv[0]). Throws UsageError on bad input.
std::variant<StoreCommandLine, InfoText> parse_store_command_line(std::vector<std::string> args);

}  // namespace ptrun::rdzv::cli
