// Client::watch: one stream per call, on a loop and connection of its own, so that watches run
// beside each other and beside the unary calls; interrupt() stops its loop.
#include "client_impl.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::etcd {

std::vector<WatchEvent> Client::watch(const std::string& key, const std::string& range_end,
                                      std::int64_t start_revision,
                                      std::chrono::milliseconds timeout, const CatchUp& catch_up) {
    constexpr std::string_view kOp = "watch";
    const auto until = detail::Clock::now() + timeout;
    auto& impl = *impl_;
    detail::Loop loop;
    Impl::Enlisted enlisted(impl, loop, kOp);
    const std::string body =
        detail::watch_request(key, range_end, catch_up ? 0 : start_revision).dump();
    detail::Attempts attempts;
    for (const std::size_t index : impl.order()) {
        const std::string where = std::string(kOp) + ": etcd at " + impl.name(index);
        try {
            detail::Connection c(loop, impl.options.endpoints[index], impl.tls.get(),
                                 impl.options.max_response);
            const auto setup = detail::Clock::now() + impl.options.io_timeout;
            c.connect(setup);
            detail::HttpReply reply;
            try {
                reply = c.post_stream("/v3/watch", body, setup);
            } catch (const rdzv::StoreError& e) {  // the reply broke HTTP or the size bound
                throw rdzv::StoreError(std::string(kOp) + ": " + e.what());
            }
            if (reply.status != 200) {
                auto error = detail::decode_error_body(reply.body);
                if (detail::is_quorum_loss(error)) {
                    attempts.no_quorum.push_back(impl.name(index) + " said '" + error.message +
                                                 "'");
                    continue;
                }
                throw rdzv::StoreError(where + " refused it (HTTP " + std::to_string(reply.status) +
                                       "): " + error.message);
            }
            bool created = false;
            std::string text;
            for (;;) {
                const auto step = c.next_message(text, created ? until : setup);
                if (step == detail::StreamStep::Deadline) {
                    if (created) return {};
                    throw detail::TransportError(
                        "timed out after " + std::to_string(impl.options.io_timeout.count()) +
                            " ms waiting for the watch to start",
                        true);
                }
                if (step == detail::StreamStep::End) {
                    throw detail::TransportError("the watch stream ended");
                }
                detail::Json json;
                detail::WatchMessage message;
                try {
                    json = detail::parse_json(text);
                    if (detail::is_error_message(json)) {
                        auto error = detail::decode_error(json);
                        if (!detail::is_quorum_loss(error)) {
                            throw rdzv::StoreError(where + " ended the stream: " + error.message);
                        }
                        attempts.no_quorum.push_back(impl.name(index) + " said '" + error.message +
                                                     "'");
                        break;
                    }
                    message = detail::decode_watch(json);
                } catch (const detail::Malformed& e) {
                    throw rdzv::StoreError(where + " sent a malformed stream message: " + e.what());
                }
                if (message.compact_revision > 0) {
                    throw rdzv::StoreError(where + ": revision " + std::to_string(start_revision) +
                                           " was compacted (the oldest left is " +
                                           std::to_string(message.compact_revision) + ")");
                }
                if (message.canceled) {
                    throw rdzv::StoreError(where + ": etcd cancelled the watch" +
                                           (message.cancel_reason.empty()
                                                ? std::string()
                                                : " (" + message.cancel_reason + ")"));
                }
                // Set up at revision R: writes at start_revision..R (or at an unknown R) are the
                // caller's to read.
                if (message.created && !created && catch_up &&
                    (message.revision == 0 || message.revision >= start_revision) && catch_up()) {
                    return {};
                }
                created = created || message.created;
                if (!message.events.empty()) {
                    impl.preferred = index;
                    return std::move(message.events);
                }
            }
        } catch (const detail::TransportError& e) {
            attempts.unreachable.push_back(impl.name(index) + " (" + e.what() + ")");
        } catch (const detail::Interrupted&) {
            detail::throw_interrupted(kOp);
        }
    }
    detail::throw_unavailable(kOp, attempts);
}

}  // namespace ptrun::etcd
