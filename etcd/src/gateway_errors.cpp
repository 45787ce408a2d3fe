#include "gateway_errors.hpp"

#include <array>

#include "ptrun/etcd/errors.hpp"

namespace ptrun::etcd::detail {
namespace {

constexpr int kUnavailable = 14;  // gRPC's status code

std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
    return out;
}

}  // namespace

bool is_quorum_loss(const GatewayError& error) {
    static constexpr std::array<std::string_view, 6> kSigns = {
        "no leader",  "request timed out", "leader changed",
        "not leader", "deadline exceeded", "timed out due to previous leader"};
    if (error.code == kUnavailable) return true;
    for (auto sign : kSigns) {
        if (error.message.find(sign) != std::string::npos) return true;
    }
    return false;
}

void throw_unavailable(std::string_view operation, const Attempts& attempts) {
    const std::string op(operation);
    if (!attempts.no_quorum.empty()) {
        std::string what = op +
                           ": the etcd cluster has lost its quorum (its members have no leader): " +
                           join(attempts.no_quorum);
        if (!attempts.unreachable.empty()) {
            what += "; cannot reach " + join(attempts.unreachable);
        }
        throw NoQuorum(what);
    }
    throw rdzv::ConnectionLost(op + ": cannot reach etcd at " + join(attempts.unreachable));
}

void throw_interrupted(std::string_view operation) {
    throw rdzv::ConnectionLost(std::string(operation) + ": etcd client interrupted");
}

}  // namespace ptrun::etcd::detail
