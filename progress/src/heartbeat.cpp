#include "ptrun/progress/heartbeat.hpp"

#include <cerrno>
#include <cstring>

namespace ptrun::progress {

Heartbeat Heartbeat::open(const std::string& path) {
    ptrun_heartbeat_record* record = ptrun_heartbeat_open(path.c_str());
    if (record == nullptr) {
        const int err = errno;
        const std::string why =
            err == EINVAL ? "not a version-1 ptrun heartbeat record" : std::strerror(err);
        throw HeartbeatError(std::string(kHeartbeatEnv) + "='" + path + "': " + why);
    }
    return Heartbeat(record);
}

Heartbeat Heartbeat::open_if_set(const std::string& path) {
    return path.empty() ? Heartbeat() : open(path);
}

Heartbeat& Heartbeat::operator=(Heartbeat&& other) noexcept {
    if (this != &other) {
        ptrun_heartbeat_close(record_);
        record_ = other.record_;
        other.record_ = nullptr;
    }
    return *this;
}

}  // namespace ptrun::progress
