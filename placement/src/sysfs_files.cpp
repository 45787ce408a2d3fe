#include "sysfs_files.hpp"

#include <algorithm>
#include <fstream>

#include "ptrun/placement/topology.hpp"

namespace ptrun::placement::detail {

namespace fs = std::filesystem;

std::optional<std::string> first_line(const fs::path& file) {
    std::ifstream in(file);
    std::string line;
    if (!in || !std::getline(in, line)) return std::nullopt;
    auto first = line.find_first_not_of(" \t\r");
    auto last = line.find_last_not_of(" \t\r");
    return first == std::string::npos ? std::string() : line.substr(first, last - first + 1);
}

std::optional<std::string> uevent_value(const fs::path& uevent, const std::string& key) {
    std::ifstream in(uevent);
    std::string line;
    while (std::getline(in, line)) {
        if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
            line[key.size()] == '=') {
            return line.substr(key.size() + 1);
        }
    }
    return std::nullopt;
}

std::vector<std::pair<unsigned, fs::path>> numbered(const fs::path& dir,
                                                    const std::string& prefix) {
    std::vector<std::pair<unsigned, fs::path>> out;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (name.size() <= prefix.size() || name.size() > prefix.size() + 6 ||
            name.compare(0, prefix.size(), prefix) != 0)
            continue;
        auto digits = name.substr(prefix.size());
        if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        out.emplace_back(static_cast<unsigned>(std::stoul(digits)), it->path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string pci_address(const fs::path& device) {
    std::error_code ec;
    std::string candidates[] = {uevent_value(device / "uevent", "PCI_SLOT_NAME").value_or(""),
                                fs::canonical(device, ec).filename().string()};
    for (const auto& c : candidates) {
        if (c.empty()) continue;
        try {
            return sysfs_bus_id(c);
        } catch (const std::exception&) {
            continue;  // not a PCI address: try the next source
        }
    }
    return {};
}

}  // namespace ptrun::placement::detail
