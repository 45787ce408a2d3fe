#include "ptrun/launcher/output/output_relay.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cerrno>
#include <chrono>
#include <optional>

#include "ptrun/launcher/output/console_stream.hpp"
#include "ptrun/launcher/output/output_filters.hpp"
#include "ptrun/watchdog/log_lines.hpp"

namespace ptrun::launcher {

SharedLog::~SharedLog() { ::close(fd); }

int write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return EIO;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return 0;
}

ConsoleLines::ConsoleLines(std::string prefix, std::size_t max_line)
    : prefix_(std::move(prefix)), max_line_(max_line) {}

void ConsoleLines::feed(const char* data, std::size_t size, std::string& out) {
    std::size_t start = 0;
    for (std::size_t i = 0; i < size; ++i) {
        const char c = data[i];
        if (c != '\n' && c != '\r') {
            if (partial_.size() + (i - start) + 1 < max_line_) continue;
            // The line reached max_line: pass it on as a piece.
            out += prefix_;
            out += partial_;
            out.append(data + start, i + 1 - start);
            out += '\n';
            partial_.clear();
            start = i + 1;
            ended_ = Ended::Piece;
            continue;
        }
        const bool empty = partial_.empty() && i == start;
        if (c == '\n' && empty && ended_ == Ended::Piece) {
            // the line's last piece already ended it
        } else if (c == '\n' && empty && ended_ == Ended::Cr) {
            out += '\n';  // the '\n' of a "\r\n": the line was already passed on
        } else if (c == '\r' && empty) {
            out += '\r';
        } else {
            out += prefix_;
            out += partial_;
            out.append(data + start, i - start);
            out += c;
        }
        partial_.clear();
        start = i + 1;
        ended_ = c == '\r' ? Ended::Cr : Ended::Newline;
    }
    if (start < size) {
        partial_.append(data + start, size - start);
        ended_ = Ended::Newline;
    }
}

void ConsoleLines::finish(std::string& out) {
    if (partial_.empty()) return;
    out += prefix_;
    out += partial_;
    out += '\n';
    partial_.clear();
}

struct OutputRelay::Impl : std::enable_shared_from_this<OutputRelay::Impl> {
    Impl(boost::asio::io_context& io, int fd, RelayTarget t)
        : pipe(io, fd), target(std::move(t)), lines(target.prefix) {
        if (target.filtered_log && !target.filters.empty()) {
            filtered.emplace(target.filters, target.filtered_prefix, kMaxConsoleLine);
        }
        if (target.log_fd >= 0 && !target.times_path.empty()) {
            times_fd = ::open(target.times_path.c_str(),
                              O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
            const off_t end = ::lseek(target.log_fd, 0, SEEK_END);
            log_offset = end > 0 ? static_cast<std::uint64_t>(end) : 0;
        }
    }

    boost::asio::posix::stream_descriptor pipe;
    RelayTarget target;
    ConsoleLines lines;
    std::optional<FilteredLines> filtered;
    std::array<char, 65536> buffer{};
    bool closed = false;
    bool log_error_reported = false;
    bool filtered_error_reported = false;
    int times_fd = -1;             ///< the log's times sidecar, -1 for none
    std::uint64_t log_offset = 0;  ///< where the next byte goes in the log file

    void write_filtered(const std::string& out) {
        if (out.empty()) return;
        int err = write_all(target.filtered_log->fd, out.data(), out.size());
        if (err != 0 && !filtered_error_reported) {
            filtered_error_reported = true;
            if (target.on_log_error) target.on_log_error(target.filtered_log->path, err);
        }
    }

    void consume(const char* data, std::size_t size) {
        if (target.log_fd >= 0) {
            if (times_fd >= 0) {
                const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch());
                if (watchdog::append_log_time(times_fd, log_offset, now.count()) != 0) {
                    ::close(times_fd);  // given up: its lines have no time
                    times_fd = -1;
                }
            }
            int err = write_all(target.log_fd, data, size);
            log_offset += size;
            if (err != 0 && !log_error_reported) {
                log_error_reported = true;
                if (target.on_log_error) target.on_log_error(target.log_path, err);
            }
            if (err == 0 && target.on_logged) target.on_logged();
        }
        if (filtered) {
            std::string out;
            filtered->feed(data, size, out);
            write_filtered(out);
        }
        if (!target.console) return;
        std::string out;
        lines.feed(data, size, out);
        if (!out.empty()) target.console->write(out);
    }

    void read_next() {
        pipe.async_read_some(
            boost::asio::buffer(buffer),
            [self = shared_from_this(), this](boost::system::error_code ec, std::size_t n) {
                if (n > 0) consume(buffer.data(), n);
                if (ec) {
                    if (ec != boost::asio::error::operation_aborted) finish();
                    return;
                }
                read_next();
            });
    }

    void finish() {
        if (closed) return;
        closed = true;
        if (filtered) {
            std::string rest;
            filtered->finish(rest);
            write_filtered(rest);
        }
        if (target.console) {
            std::string rest;
            lines.finish(rest);
            if (!rest.empty()) target.console->write(rest);
        }
        boost::system::error_code ignored;
        pipe.close(ignored);
        if (target.log_fd >= 0) ::close(target.log_fd);
        target.log_fd = -1;
        if (times_fd >= 0) ::close(times_fd);
        times_fd = -1;
    }
};

OutputRelay::OutputRelay(boost::asio::io_context& io, int read_fd, RelayTarget target)
    : impl_(std::make_shared<Impl>(io, read_fd, std::move(target))) {
    if (!impl_->target.wait_for_prefix) impl_->read_next();
}

void OutputRelay::begin(std::string prefix, std::string filtered_prefix) {
    if (impl_->closed || !impl_->target.wait_for_prefix) return;
    impl_->target.wait_for_prefix = false;
    impl_->target.prefix = std::move(prefix);
    impl_->target.filtered_prefix = std::move(filtered_prefix);
    impl_->lines = ConsoleLines(impl_->target.prefix);
    if (impl_->filtered) {
        impl_->filtered.emplace(impl_->target.filters, impl_->target.filtered_prefix,
                                kMaxConsoleLine);
    }
    impl_->read_next();
}

OutputRelay::~OutputRelay() { drain(); }

void OutputRelay::drain() {
    if (impl_->closed) return;
    int fd = impl_->pipe.native_handle();
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    while (true) {
        ssize_t n = ::read(fd, impl_->buffer.data(), impl_->buffer.size());
        if (n > 0) {
            impl_->consume(impl_->buffer.data(), static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        break;
    }
    impl_->finish();
}

}  // namespace ptrun::launcher
