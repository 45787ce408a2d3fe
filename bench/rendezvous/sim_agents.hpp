#pragma once
/// N simulated ptrun agents speaking the multi-node rendezvous exactly as RdzvSession does, over
/// an EventLoop: join = ADD hb, QUEUE_PUSH JoinEvent, WAIT+GET admit (TcpStoreClient::get), decode
/// the NodePlacement it holds; watch = WAIT+GET end; beats = ADD hb on their own connection every
/// interval.

#include <functional>
#include <string>
#include <vector>

#include "event_loop.hpp"
#include "ptrun/launcher/membership/rdzv_keys.hpp"
#include "ptrun/launcher/membership/round.hpp"

namespace ptrun::bench {

class SimAgents {
  public:
    using OnAssigned = std::function<void(int agent, int round, std::size_t admission_bytes)>;
    using OnEnd = std::function<void(int agent, const launcher::RoundEnd& end)>;

    /// Opens one control connection per agent (and one beat connection each when `beats`).
    SimAgents(EventLoop& loop, std::uint16_t port, launcher::RdzvKeys keys, int count,
              int max_restarts, bool beats);

    int size() const { return static_cast<int>(nodes_.size()); }
    const launcher::NodeInfo& node(int i) const { return nodes_[static_cast<std::size_t>(i)]; }
    /// Agent `i` joins the next round (seq + 1); `done` runs once it holds the assignment.
    /// `pushed` runs right after its JoinEvent went out. Throws on a refused admission.
    void join(int i, OnAssigned done, std::function<void(int)> pushed = {});
    /// Agent `i` waits for `round`'s end; `ended` gets the decoded RoundEnd.
    void watch(int i, int round, OnEnd ended, std::function<void(int)> woke = {});
    /// Every agent not silenced beats every `interval`, starting spread over one interval.
    void start_beats(Clock::duration interval);
    /// Agent `i` sends no more heartbeats (a lost node); returns when its last beat was sent.
    Clock::time_point silence(int i);

  private:
    void beat(int i, Clock::duration interval);
    void get(Conn& c, const std::string& key, std::function<void(std::string_view)> got);

    EventLoop& loop_;
    launcher::RdzvKeys keys_;
    std::vector<launcher::NodeInfo> nodes_;
    std::vector<int> seq_;
    std::vector<Conn*> control_;
    std::vector<Conn*> beat_;
    std::vector<bool> silent_;
    std::vector<Clock::time_point> last_beat_;
};

}  // namespace ptrun::bench
