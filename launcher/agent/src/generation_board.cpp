#include "ptrun/launcher/agent/generation_board.hpp"

#include "ptrun/env/generation_keys.hpp"
#include "ptrun/rendezvous/errors.hpp"

namespace ptrun::launcher {
namespace {

namespace keys = env::generation_keys;

rdzv::TcpStoreClientOptions board_options(const std::string& host, std::uint16_t port) {
    rdzv::TcpStoreClientOptions o;
    o.host = host;
    o.port = port;
    o.connect_timeout = std::chrono::seconds(10);
    o.io_timeout = std::chrono::seconds(10);
    return o;
}

std::string rank_list(const std::vector<int>& ranks) {
    std::string text;
    for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
    return text;
}

}  // namespace

GenerationBoard::GenerationBoard(const std::string& host, std::uint16_t port)
    : options_(board_options(host, port)), writer_(options_) {}

GenerationBoard::~GenerationBoard() { stop(); }

void GenerationBoard::stop() noexcept {
    stopping_ = true;
    if (waiter_client_) waiter_client_->interrupt();
    if (waiter_.joinable()) waiter_.join();
    waiter_client_.reset();
    stopping_ = false;
}

int GenerationBoard::begin(const std::vector<int>& replaced, std::chrono::milliseconds timeout,
                           Ended ended) {
    // The latest generation is a counter every agent of the job adds to: numbers are job-wide,
    // only grow, and are known before `begun`, so whoever wakes on `superseded` or `begun` reads
    // a latest generation at least as new as the one that woke it.
    const auto generation = static_cast<int>(writer_.add(keys::kLatest, 1));
    // The previous generation's workers waiting on its ready key move on to this one (whichever
    // agent began it: another node's replacement supersedes ours as ours supersedes it).
    if (generation > 1) writer_.compare_set(keys::ready(generation - 1), "", keys::kSuperseded);
    stop();  // its waiter has woken (or ended before); one waiter at a time
    writer_.set(keys::begun(generation), rank_list(replaced));
    waiter_client_ = std::make_unique<rdzv::TcpStoreClient>(options_);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    waiter_ = std::thread(
        [this, client = waiter_client_.get(), generation, deadline, ended = std::move(ended)] {
            bool joined = false;
            try {
                // Superseded by a generation another agent began: ours is joined when the newest
                // is.
                for (int g = generation;; ++g) {
                    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now());
                    if (left <= std::chrono::milliseconds(0)) break;
                    const std::string ready = keys::ready(g);
                    client->wait({ready}, left);
                    const std::string value = client->get(ready, std::chrono::seconds(10));
                    if (value == keys::kSuperseded) continue;
                    joined = value == keys::kJoined;
                    break;
                }
            } catch (const rdzv::StoreError&) {
                if (stopping_) return;  // stop(): nobody waits for the answer
                // a timeout or a store failure: the fallback
            }
            ended(generation, joined);
        });
    return generation;
}

}  // namespace ptrun::launcher
