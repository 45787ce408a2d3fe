#include "ptrun/launcher/cli/rdzv_conf.hpp"

#include "ptrun/launcher/cli/usage_error.hpp"

namespace ptrun::launcher {

RdzvConf parse_rdzv_conf(std::string_view text) {
    RdzvConf conf;
    std::string_view rest = text;
    while (!rest.empty()) {
        auto comma = rest.find(',');
        auto item = rest.substr(0, comma);
        auto eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            throw UsageError("--rdzv-conf '" + std::string(text) + "': item '" + std::string(item) +
                             "' is not KEY=VALUE (expected key=value,key=value)");
        }
        conf.insert_or_assign(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
    }
    return conf;
}

}  // namespace ptrun::launcher
