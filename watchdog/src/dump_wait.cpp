#include "ptrun/watchdog/dump_wait.hpp"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace ptrun::watchdog {
namespace {

namespace asio = boost::asio;

off_t size_of(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

class InotifyDumpWait final : public DumpWait {
  public:
    InotifyDumpWait(asio::io_context& io, std::vector<std::string> paths, Timing timing, Done done)
        : io_(io),
          paths_(std::move(paths)),
          sizes_(paths_.size(), 0),
          timing_(timing),
          done_(std::move(done)),
          events_(io),
          settle_(io),
          limit_(io) {}

    void begin() {
        auto self = std::static_pointer_cast<InotifyDumpWait>(shared_from_this());
        limit_.expires_after(timing_.limit);
        limit_.async_wait([self](boost::system::error_code ec) {
            if (!ec) self->finish();
        });
        const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0) return;  // the limit ends the wait
        events_.assign(fd);
        for (const auto& path : paths_) ::inotify_add_watch(fd, path.c_str(), IN_MODIFY);
        listen();
        asio::post(io_, [self] { self->check(); });  // dumps written before the watches
    }

    void cancel() override {
        done_ = nullptr;
        stop();
    }

  private:
    void listen() {
        auto self = std::static_pointer_cast<InotifyDumpWait>(shared_from_this());
        events_.async_wait(
            asio::posix::stream_descriptor::wait_read, [self](boost::system::error_code ec) {
                if (ec || !self->done_) return;
                std::array<char, 4096> buffer{};
                while (::read(self->events_.native_handle(), buffer.data(), buffer.size()) > 0) {
                }
                self->check();
                self->listen();
            });
    }

    /// After any write: re-arms the settle timer when every file has something and one grew.
    void check() {
        if (!done_) return;
        bool all = true, grew = false;
        for (std::size_t i = 0; i < paths_.size(); ++i) {
            const auto now = size_of(paths_[i]);
            grew = grew || now != sizes_[i];
            sizes_[i] = now;
            all = all && now > 0;
        }
        if (!all || !grew) return;
        auto self = std::static_pointer_cast<InotifyDumpWait>(shared_from_this());
        settle_.expires_after(timing_.settle);
        settle_.async_wait([self](boost::system::error_code ec) {
            if (!ec) self->finish();
        });
    }

    void finish() {
        auto done = std::move(done_);
        done_ = nullptr;
        stop();
        if (done) done();
    }

    void stop() {
        boost::system::error_code ignored;
        settle_.cancel();
        limit_.cancel();
        if (events_.is_open()) events_.close(ignored);
    }

    asio::io_context& io_;
    std::vector<std::string> paths_;
    std::vector<off_t> sizes_;
    Timing timing_;
    Done done_;
    asio::posix::stream_descriptor events_;
    asio::steady_timer settle_;
    asio::steady_timer limit_;
};

}  // namespace

std::shared_ptr<DumpWait> DumpWait::start(asio::io_context& io, std::vector<std::string> paths,
                                          Timing timing, Done done) {
    auto wait = std::make_shared<InotifyDumpWait>(io, std::move(paths), timing, std::move(done));
    wait->begin();
    return wait;
}

}  // namespace ptrun::watchdog
