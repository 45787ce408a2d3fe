#pragma once
/// Small readers the device detectors share (private to placement/).

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ptrun::placement::detail {

/// The first line of `file`, trimmed; nullopt when it cannot be read.
std::optional<std::string> first_line(const std::filesystem::path& file);

/// The value of `KEY=` in a uevent file ("PCI_SLOT_NAME", "DRIVER"); nullopt when absent.
std::optional<std::string> uevent_value(const std::filesystem::path& uevent,
                                        const std::string& key);

/// The entries of `dir` named `prefix` then digits only, with those digits, ascending.
std::vector<std::pair<unsigned, std::filesystem::path>> numbered(const std::filesystem::path& dir,
                                                                 const std::string& prefix);

/// The PCI address of a sysfs device directory (`.../device`): its uevent's PCI_SLOT_NAME,
/// else the name the link resolves to; "" when neither reads as one.
std::string pci_address(const std::filesystem::path& device);

}  // namespace ptrun::placement::detail
