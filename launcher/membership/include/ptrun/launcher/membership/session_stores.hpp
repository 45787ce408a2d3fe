#pragma once
/// The store connections of one agent's rendezvous session (rdzv_session.hpp), whose threads
/// join, watch and beat. Where the store can cut a wait short (rdzv::Store::wakeable: ptrun's
/// and torch 2.x's TCP store) they share one connection: a short call ends the long wait in
/// progress and goes first, and the wait then resumes for its time left. At 16,384 nodes one
/// connection per agent is what fits a store host's descriptors; three did not. Elsewhere (etcd,
/// a file, a 1.13 store) each role has a connection of its own.
///
/// Once a call on the shared connection failed (but for a wait's own timeout), every later one
/// fails at once with ConnectionLost naming that failure: no thread reconnects for
/// connect_timeout while the others wait behind it (with a connection each, each learnt of its
/// own connection's loss at once).

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "ptrun/launcher/membership/store_connector.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::launcher {

class SessionStores {
  public:
    enum class Role { Join, Watch, Beat };

    /// Opens one connection with the shorter of `io_timeout` and `beat_io_timeout`; when the
    /// store cannot wake, two more, so that join and watch have `io_timeout` and the beats
    /// `beat_io_timeout`. Throws rdzv::StoreError as `connect` does.
    SessionStores(const StoreConnector& connect, std::chrono::milliseconds io_timeout,
                  std::chrono::milliseconds beat_io_timeout);

    /// True when the roles share one connection.
    bool shared() const { return !watch_; }  // the constructor opens watch_ last

    /// Runs `body(store)`, a call that does not wait long, on `role`'s connection; on a shared
    /// one, after cutting short the wait in progress.
    template <typename Call>
    auto call(Role role, Call&& body) {
        Turn turn(*this, false);
        try {
            return body(store(role));
        } catch (const rdzv::StoreError& e) {
            turn.broke(e);
            throw;
        }
    }

    /// Runs `body(store, time_left)`, a blocking wait, on `role`'s connection until it returns or
    /// `timeout` passes (StoreTimeout); on a shared one, a short call cutting it short gets the
    /// connection and the wait then resumes for its time left.
    template <typename Wait>
    auto wait(Role role, std::chrono::milliseconds timeout, Wait&& body) {
        using Clock = std::chrono::steady_clock;
        const auto deadline = Clock::now() + timeout;
        for (;;) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
            Turn turn(*this, true);
            try {
                return body(store(role), std::max(left, std::chrono::milliseconds(0)));
            } catch (const rdzv::StoreWoken&) {
                // a short call's turn: the wait resumes after it
            } catch (const rdzv::StoreNoReply& e) {
                turn.broke(e);
                throw;
            } catch (const rdzv::StoreTimeout&) {
                throw;  // its own time is up: the connection serves on
            } catch (const rdzv::StoreError& e) {
                turn.broke(e);
                throw;
            }
        }
    }

    /// From any thread: every call in progress and later fails with ConnectionLost.
    void interrupt() noexcept;

  private:
    /// The shared connection held for one call: a long wait waits while short calls are
    /// queued; a short call wakes the long wait holding it. Nothing on separate connections.
    class Turn {
      public:
        Turn(SessionStores& stores, bool long_wait);
        ~Turn();
        Turn(const Turn&) = delete;
        Turn& operator=(const Turn&) = delete;
        /// The call in this turn failed with `e`: the shared connection is given up.
        void broke(const rdzv::StoreError& e);

      private:
        SessionStores& stores_;
    };

    rdzv::Store& store(Role role) const;

    std::unique_ptr<rdzv::Store> join_;   ///< the shared one, or the join's
    std::unique_ptr<rdzv::Store> watch_;  ///< null when shared
    std::unique_ptr<rdzv::Store> beat_;   ///< null when shared
    std::mutex mu_;
    std::condition_variable free_;
    bool busy_ = false;       ///< a call holds the shared connection
    bool long_wait_ = false;  ///< ... and it is a long wait
    int short_calls_ = 0;     ///< short calls waiting for it
    std::string broken_;      ///< why the shared connection was given up; empty while it serves
};

}  // namespace ptrun::launcher
