#include "ptrun/watchdog/log_followers.hpp"

#include <sys/inotify.h>

#include <cstring>
#include <vector>

namespace ptrun::watchdog {
namespace {

/// Whether the inotify events in `data` name a write (not a watch's removal).
bool modified(const char* data, std::size_t size) {
    std::size_t at = 0;
    while (at + sizeof(inotify_event) <= size) {
        inotify_event e{};
        std::memcpy(&e, data + at, sizeof e);
        if ((e.mask & IN_MODIFY) != 0) return true;
        at += sizeof e + e.len;
    }
    return false;
}

}  // namespace

void LogFollowers::watch(const std::string& path) {
    watched_.push_back(path);
    if (inotify_) add_watch(path);
}

void LogFollowers::unwatch_all() {
    if (inotify_) {
        for (int wd : watches_) ::inotify_rm_watch(inotify_->native_handle(), wd);
    }
    watches_.clear();
    watched_.clear();
}

void LogFollowers::start_watching() {
    if (inotify_) return;
    const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) return;  // no inotify: the lines come on each poll's own turn
    inotify_ = std::make_unique<boost::asio::posix::stream_descriptor>(io_, fd);
    for (const auto& path : watched_) add_watch(path);
    read_events();
}

void LogFollowers::add_watch(const std::string& path) {
    const int wd = ::inotify_add_watch(inotify_->native_handle(), path.c_str(), IN_MODIFY);
    if (wd >= 0) watches_.push_back(wd);  // none (a full watch table): lines wait for the turn
}

void LogFollowers::read_events() {
    inotify_->async_read_some(boost::asio::buffer(events_),
                              [this](boost::system::error_code ec, std::size_t n) {
                                  if (ec == boost::asio::error::operation_aborted) return;
                                  if (modified(events_.data(), n)) written();  // one a batch
                                  if (!ec || ec == boost::asio::error::try_again) read_events();
                              });
}

std::string LogFollowers::text() const {
    return logs_wait_answer_text(LogsWaitAnswer{count_, exit_code_});
}

void LogFollowers::wait(const LogsWaitQuery& query, Reply reply) {
    followed_ = true;
    start_watching();
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
