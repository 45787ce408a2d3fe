#pragma once
/// What the client makes of a member's refusal, and the errors it throws when no member served.

#include <string>
#include <string_view>
#include <vector>

#include "ptrun/rendezvous/errors.hpp"
#include "wire.hpp"

namespace ptrun::etcd::detail {

/// A member answered with an error that another member would answer too (a bad request, an
/// unknown lease, a compacted revision, ...).
class Refused : public rdzv::StoreError {
  public:
    Refused(const std::string& what, GatewayError error)
        : rdzv::StoreError(what), error_(std::move(error)) {}
    const GatewayError& error() const noexcept { return error_; }

  private:
    GatewayError error_;
};

/// True when `error` says the member's cluster cannot serve now ("etcdserver: no leader",
/// "request timed out", "leader changed", ...): another member may still have quorum.
bool is_quorum_loss(const GatewayError& error);

/// What each member tried said, for the error thrown once none served.
struct Attempts {
    std::vector<std::string> unreachable;  ///< "a:2379 (connection refused)"
    std::vector<std::string> no_quorum;    ///< "a:2379 said 'etcdserver: no leader'"
};

/// etcd::NoQuorum when a member answered like a cluster without quorum, rdzv::ConnectionLost
/// naming every endpoint and why otherwise.
[[noreturn]] void throw_unavailable(std::string_view operation, const Attempts& attempts);

/// rdzv::ConnectionLost for a call on an interrupted client.
[[noreturn]] void throw_interrupted(std::string_view operation);

}  // namespace ptrun::etcd::detail
