#pragma once
/// Client's state: the members, the kept-alive connection of unary calls (under a mutex), and
/// the loops interrupt() stops.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gateway_errors.hpp"
#include "ptrun/etcd/client.hpp"
#include "transport.hpp"
#include "wire.hpp"

namespace ptrun::etcd {

struct Client::Impl {
    explicit Impl(ClientOptions o);
    ~Impl();

    /// The members in the order to try them: the one that answered last first.
    std::vector<std::size_t> order() const;
    /// `endpoint_text` of member `index`.
    std::string name(std::size_t index) const;

    /// Sends `body` to `target` on the first member that serves it and returns decode(reply).
    /// A streaming target (lease keepalive) gives its first message. Throws as Client says.
    template <typename Decode>
    auto call(std::string_view operation, std::string_view target, const detail::Json& body,
              Decode&& decode, bool stream = false);

    /// One exchange with member `index` on the kept-alive connection (reconnected as needed).
    detail::HttpReply exchange(std::size_t index, std::string_view target, const std::string& body,
                               bool stream);

    /// Adds `loop` to those interrupt() stops; throws ConnectionLost when already interrupted.
    void enlist(detail::Loop& loop, std::string_view operation);
    void discharge(detail::Loop& loop) noexcept;
    /// enlist() for a scope.
    class Enlisted {
      public:
        Enlisted(Impl& impl, detail::Loop& loop, std::string_view operation)
            : impl_(impl), loop_(loop) {
            impl_.enlist(loop_, operation);
        }
        ~Enlisted() { impl_.discharge(loop_); }
        Enlisted(const Enlisted&) = delete;
        Enlisted& operator=(const Enlisted&) = delete;

      private:
        Impl& impl_;
        detail::Loop& loop_;
    };
    void check_live(std::string_view operation);
    /// After every member failed: false once `give_up` is near; else waits 250 ms (interrupt()
    /// ends the wait with ConnectionLost) and returns true.
    bool pause_before_retry(detail::Clock::time_point give_up, std::string_view operation);

    /// `at`, or the limit_until deadline when that comes first.
    detail::Clock::time_point bounded(detail::Clock::time_point at) const {
        return until && *until < at ? *until : at;
    }

    ClientOptions options;
    std::optional<detail::Clock::time_point> until;  ///< limit_until's; under mu
    std::unique_ptr<detail::TlsContext> tls;
    std::atomic<std::size_t> preferred{0};  ///< the member that answered last

    std::mutex mu;  ///< serialises unary calls
    detail::Loop loop;
    std::unique_ptr<detail::Connection> connection;  ///< declared after (destroyed before) loop
    std::size_t connected_to = 0;

    std::mutex stop_mu;
    std::condition_variable stopped;  ///< notified by interrupt()
    bool interrupted = false;
    std::vector<detail::Loop*> watch_loops;
};

template <typename Decode>
auto Client::Impl::call(std::string_view operation, std::string_view target,
                        const detail::Json& body, Decode&& decode, bool stream) {
    std::lock_guard lock(mu);
    check_live(operation);
    const std::string text = body.dump();
    const auto give_up = bounded(detail::Clock::now() + options.retry_for);
    detail::Attempts attempts;
    for (bool again = true; again; again = pause_before_retry(give_up, operation)) {
        attempts = {};
        for (const std::size_t index : order()) {
            detail::HttpReply reply;
            try {
                reply = exchange(index, target, text, stream);
            } catch (const detail::TransportError& e) {
                attempts.unreachable.push_back(name(index) + " (" + e.what() + ")");
                continue;
            } catch (const detail::Interrupted&) {
                detail::throw_interrupted(operation);
            } catch (const rdzv::StoreError& e) {  // the reply broke HTTP or the size bound
                throw rdzv::StoreError(std::string(operation) + ": " + e.what());
            }
            const std::string where = std::string(operation) + ": etcd at " + name(index);
            detail::Json json;
            if (reply.status == 200) {
                try {
                    json = detail::parse_json(reply.body);
                } catch (const detail::Malformed& e) {
                    throw rdzv::StoreError(where + " sent a malformed reply to " +
                                           std::string(target) + ": " + e.what());
                }
            }
            if (reply.status != 200 || detail::is_error_message(json)) {
                auto error = reply.status != 200 ? detail::decode_error_body(reply.body)
                                                 : detail::decode_error(json);
                if (detail::is_quorum_loss(error)) {
                    attempts.no_quorum.push_back(name(index) + " said '" + error.message + "'");
                    continue;
                }
                const std::string what = where + " refused it (HTTP " +
                                         std::to_string(reply.status) + "): " + error.message;
                throw detail::Refused(what, std::move(error));
            }
            try {
                auto result = decode(json);
                preferred = index;
                return result;
            } catch (const detail::Malformed& e) {
                throw rdzv::StoreError(where + " sent a malformed reply to " + std::string(target) +
                                       ": " + e.what());
            }
        }
    }
    detail::throw_unavailable(operation, attempts);
}

}  // namespace ptrun::etcd
