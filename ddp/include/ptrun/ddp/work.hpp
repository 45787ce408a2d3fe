#pragma once
/// Work: the asynchronous handle a collective returns.

#include <memory>

namespace ptrun::ddp {

/// One issued collective. Its buffers must stay alive (and untouched) until wait() returns.
class Work {
  public:
    virtual ~Work();
    /// Blocks until the collective completes; rethrows its error (CollectiveTimeout, PeerLost,
    /// CollectiveError). The collective's own timeout bounds the wait. Callable more than once.
    virtual void wait() = 0;
    /// True once the collective finished, successfully or not. Does not block.
    virtual bool completed() = 0;
};

using WorkPtr = std::shared_ptr<Work>;

}  // namespace ptrun::ddp
