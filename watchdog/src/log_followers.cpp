#include "ptrun/watchdog/log_followers.hpp"

#include <vector>

namespace ptrun::watchdog {

std::string LogFollowers::text() const {
    return logs_wait_answer_text(LogsWaitAnswer{count_, exit_code_});
}

void LogFollowers::wait(const LogsWaitQuery& query, Reply reply) {
    followed_ = true;
    if (query.seen != count_ || exit_code_ || query.wait.count() == 0) {
        return reply(200, text());
    }
    if (held_.size() >= kMaxLogFollowers) {
        return reply(
            503, "already holding " + std::to_string(kMaxLogFollowers) + " --follow requests\n");
    }
    const std::uint64_t id = next_id_++;
    auto timer = std::make_unique<boost::asio::steady_timer>(io_, query.wait);
    timer->async_wait([this, id](boost::system::error_code ec) {
        if (!ec) answer(id);
    });
    held_.emplace(id, Held{std::move(reply), std::move(timer)});
}

void LogFollowers::answer(std::uint64_t id) {
    auto it = held_.find(id);
    if (it == held_.end()) return;
    Reply reply = std::move(it->second.reply);
    it->second.timer->cancel();
    held_.erase(it);
    reply(200, text());
}

void LogFollowers::written() {
    ++count_;
    std::vector<std::uint64_t> ids;
    for (const auto& [id, held] : held_) ids.push_back(id);
    for (auto id : ids) answer(id);
}

void LogFollowers::ended(int code) {
    exit_code_ = code;
    std::vector<std::uint64_t> ids;
    for (const auto& [id, held] : held_) ids.push_back(id);
    for (auto id : ids) answer(id);
}

}  // namespace ptrun::watchdog
