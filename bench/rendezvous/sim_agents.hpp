#pragma once
/// N simulated ptrun agents speaking the multi-node rendezvous exactly as RdzvSession does, over
/// an EventLoop: join = ADD hb (first join only), QUEUE_PUSH JoinEvent, WAIT+GET admit
/// (TcpStoreClient::get), decode the NodePlacement it holds, hand it on, then (clock_samples, first
/// admission only) WAIT+GETs of the clock key as measure_clock does; watch = WAIT+GET end; beats =
/// ADD hb every interval.
///
/// Connections per agent (`conns`): 1 is RdzvSession's on a TCP store (session_stores.hpp):
/// join, watch and beats share it, a beat due while a WAIT is pending is CANCEL_WAIT, ADD, WAIT
/// again (any other request would drop the pending wait without a reply); 3 was its own before
/// (join, watch and heartbeat clients, as on etcd still); 2 puts join and watch on one (they
/// never wait at once in this bench).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "event_loop.hpp"
#include "ptrun/launcher/membership/rdzv_keys.hpp"
#include "ptrun/launcher/membership/round.hpp"

namespace ptrun::bench {

struct SimOptions {
    int first = 0;  ///< the global index of agent 0 (node names and ids)
    int count = 0;  ///< agents simulated here
    int max_restarts = 3;
    int conns = 2;               ///< connections per agent: 3, 2 or 1 (above)
    bool beats = false;          ///< false: no heartbeat connection (conns 2 -> 1, 3 -> 2)
    int clock_samples = 0;       ///< WAIT+GETs of the clock key after the first admission (5)
    bool join_progress = false;  ///< a join waiting 1 s, then every 5 s, reads the joined count
};

class SimAgents {
  public:
    using OnAssigned = std::function<void(int agent, int round, std::size_t admission_bytes)>;
    using OnEnd = std::function<void(int agent, const launcher::RoundEnd& end)>;

    /// Opens the connections (agent indices below are local: 0 .. count-1).
    SimAgents(EventLoop& loop, std::uint16_t port, launcher::RdzvKeys keys, SimOptions options);

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
    /// How many times a waiting join reported its progress (join_progress).
    int progress_reports() const { return progress_reports_; }

  private:
    /// A WAIT of agent `i` on its connection `c` for `key`; `stopped` runs once it exists.
    void wait_for(int i, Conn& c, const std::string& key, std::function<void()> stopped);
    void beat(int i, Clock::duration interval);
    void get(int i, Conn& c, const std::string& key, std::function<void(std::string_view)> got);
    void sample_clock(int i, int left, std::function<void()> done);
    void progress(int i, int seq, Clock::duration every);

    /// An agent's pending WAIT (its join's or its watch's: never both at once here), sent
    /// again after a CANCEL_WAIT.
    struct Waiting {
        std::string key;
        std::function<void(std::string_view)> on_reply;
        Conn* conn;
        bool active;  ///< false while a progress report has it cancelled
    };

    EventLoop& loop_;
    launcher::RdzvKeys keys_;
    SimOptions options_;
    std::vector<launcher::NodeInfo> nodes_;
    std::vector<bool> clock_busy_;  ///< the clock is being sampled after the first admission
    std::vector<std::function<void()>> after_clock_;  ///< a watch asked for meanwhile
    std::vector<int> seq_;
    std::vector<Conn*> join_;
    std::vector<Conn*> watch_;
    std::vector<Conn*> beat_;
    std::vector<std::optional<Waiting>> waiting_;
    std::vector<bool> silent_;
    std::vector<Clock::time_point> last_beat_;
    int progress_reports_ = 0;
};

}  // namespace ptrun::bench
