#include "ptrun/launcher/hosts/host_lines.hpp"

#include <utility>

namespace ptrun::launcher {

std::string host_line(std::string_view host, std::string_view line) {
    const std::string own = "[" + std::string(host) + ":";
    const std::string ptrun = "[ptrun " + std::string(host) + ":";
    if (line.substr(0, own.size()) == own || line.substr(0, ptrun.size()) == ptrun) {
        return std::string(line);
    }
    return "[" + std::string(host) + "] " + std::string(line);
}

std::vector<std::string> LineSplitter::feed(std::string_view data) {
    std::vector<std::string> lines;
    while (!data.empty()) {
        const auto nl = data.find('\n');
        const auto take = nl == std::string_view::npos ? data.size() : nl;
        const auto room = max_line_ - partial_.size();
        if (take >= room) {  // a piece of a long line
            partial_.append(data.substr(0, room));
            lines.push_back(std::exchange(partial_, {}));
            data.remove_prefix(room);
            if (!data.empty() && data.front() == '\n' && take == room) data.remove_prefix(1);
            continue;
        }
        partial_.append(data.substr(0, take));
        if (nl == std::string_view::npos) break;
        lines.push_back(std::exchange(partial_, {}));
        data.remove_prefix(nl + 1);
    }
    return lines;
}

std::string LineSplitter::rest() { return std::exchange(partial_, {}); }

}  // namespace ptrun::launcher
