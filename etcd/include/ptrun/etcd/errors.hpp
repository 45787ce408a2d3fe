#pragma once
/// etcd's own failure beside the store's (rendezvous/errors.hpp).

#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::etcd {

/// Members answered, but the cluster cannot serve: it has no leader (lost quorum). The message
/// names the members that answered and what they said.
class NoQuorum : public rdzv::ConnectionLost {
  public:
    using rdzv::ConnectionLost::ConnectionLost;
};

}  // namespace ptrun::etcd
