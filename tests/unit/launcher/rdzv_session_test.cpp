// An agent's RdzvSession against a real store server on loopback: the store going away.
#include "ptrun/launcher/membership/rdzv_session.hpp"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/rendezvous/in_memory_store.hpp"
#include "ptrun/rendezvous/tcp_store_server.hpp"

using namespace ptrun::launcher;
using namespace std::chrono_literals;
using ptrun::rdzv::Duration;

namespace {

/// A handle on an in-memory store that, once `silent` is set, gets no reply to anything: each
/// call throws StoreNoReply as TcpStoreClient does when its io timeout passes.
class SilentStore final : public ptrun::rdzv::Store {
  public:
    SilentStore(std::unique_ptr<ptrun::rdzv::Store> inner, const std::atomic<bool>& silent)
        : inner_(std::move(inner)), silent_(silent) {}
    void set(std::string_view k, std::string_view v) override { live("set")->set(k, v); }
    std::string get(std::string_view k, Duration t) override { return live("get")->get(k, t); }
    std::int64_t add(std::string_view k, std::int64_t d) override { return live("add")->add(k, d); }
    std::string compare_set(std::string_view k, std::string_view e, std::string_view d) override {
        return live("compare_set")->compare_set(k, e, d);
    }
    bool check(const std::vector<std::string>& k) override { return live("check")->check(k); }
    void wait(const std::vector<std::string>& k, Duration t) override { live("wait")->wait(k, t); }
    bool delete_key(std::string_view k) override { return live("delete")->delete_key(k); }
    std::int64_t num_keys() override { return live("num_keys")->num_keys(); }
    void append(std::string_view k, std::string_view v) override { live("append")->append(k, v); }
    std::vector<std::string> multi_get(const std::vector<std::string>& k, Duration t) override {
        return live("multi_get")->multi_get(k, t);
    }
    void multi_set(const std::vector<std::string>& k, const std::vector<std::string>& v) override {
        live("multi_set")->multi_set(k, v);
    }
    void queue_push(std::string_view k, std::string_view v) override {
        live("queue_push")->queue_push(k, v);
    }
    std::string queue_pop(std::string_view k, Duration t) override {
        return live("queue_pop")->queue_pop(k, t);
    }
    std::int64_t queue_len(std::string_view k) override { return live("queue_len")->queue_len(k); }
    std::vector<std::string> queue_pop_batch(std::string_view k, std::size_t m,
                                             Duration t) override {
        return live("queue_pop_batch")->queue_pop_batch(k, m, t);
    }
    std::vector<std::string> list_keys() override { return live("list_keys")->list_keys(); }
    void interrupt() noexcept override { inner_->interrupt(); }
    bool wakeable() const noexcept override { return inner_->wakeable(); }
    void wake() noexcept override { inner_->wake(); }

  private:
    ptrun::rdzv::Store* live(const char* operation) {
        if (silent_)
            throw ptrun::rdzv::StoreNoReply(std::string(operation) + " (no reply)", {}, 1500ms);
        return inner_.get();
    }
    std::unique_ptr<ptrun::rdzv::Store> inner_;
    const std::atomic<bool>& silent_;
};

/// A one-node session's options with `heartbeat`; the store is the caller's to set.
RdzvSessionOptions one_node_options(std::chrono::milliseconds heartbeat) {
    RdzvSessionOptions o;
    o.keys = rdzv_keys("session-test");
    o.self.id = "node-a";
    o.self.hostname = "node-a";
    o.self.addr = "127.0.0.1";
    o.nnodes = NodeRange{1, 1};
    o.settings.join_timeout = 5s;
    o.settings.read_timeout = 2s;
    o.settings.heartbeat = heartbeat;
    o.logger = std::make_shared<spdlog::logger>("session-test",
                                                std::make_shared<spdlog::sinks::null_sink_mt>());
    return o;
}

/// The placement a watch of round 1 takes.
NodePlacement round_one() {
    NodePlacement placement;
    placement.round = 1;
    placement.token = "0123456789abcdef";
    return placement;
}

}  // namespace

TEST_CASE("a session's lost callback may call back into the session", "[launcher][rdzv_session]") {
    ptrun::rdzv::TcpStoreServerOptions so;
    so.host = "127.0.0.1";
    auto server = std::make_unique<ptrun::rdzv::TcpStoreServer>(so);

    RdzvSessionOptions o = one_node_options(100ms);
    o.store = HostPort{"127.0.0.1", server->port()};
    RdzvSession session(std::move(o));
    const NodePlacement placement = round_one();
    std::promise<std::string> reported;
    auto lost = reported.get_future();
    // The agent's reaction to a lost store may be to tell the coordinator (a session call).
    session.watch(
        placement, [](RoundEnd) {},
        [&](std::string message) {
            session.report_leaving(1, "store lost");
            reported.set_value(std::move(message));
        });
    server->stop();
    REQUIRE(lost.wait_for(20s) == std::future_status::ready);
    CHECK(lost.get().find("127.0.0.1") != std::string::npos);
}

TEST_CASE("a store that stops answering the watch is reported as silent, not as lost",
          "[launcher][rdzv_session]") {
    // hosts.multinode's cut link: whichever of the watch and the heartbeat meets the silence
    // first, the report says the store stopped answering (the watch once retried and then
    // reported the shared connection's loss instead).
    ptrun::rdzv::InMemoryStore data;
    std::atomic<bool> silent{false};
    RdzvSessionOptions o = one_node_options(60s);  // the watch meets the silence first
    o.store = HostPort{"127.0.0.1", 1};
    o.connect = [&](std::chrono::milliseconds) -> std::unique_ptr<ptrun::rdzv::Store> {
        return std::make_unique<SilentStore>(data.connect(), silent);
    };
    RdzvSession session(std::move(o));
    const NodePlacement placement = round_one();
    std::promise<std::string> reported;
    auto lost = reported.get_future();
    data.get(rdzv_keys("session-test").heartbeat("node-a"), 5s);  // the first beat went through
    silent = true;
    session.watch(
        placement, [](RoundEnd) {}, [&](std::string message) { reported.set_value(message); });
    REQUIRE(lost.wait_for(20s) == std::future_status::ready);
    const auto message = lost.get();
    INFO(message);
    CHECK(message.find("stopped answering") != std::string::npos);
}
