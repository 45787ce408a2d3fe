#include <utility>  // before Asio: Boost 1.74 + g++ 12 in C++20
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "ptrun/launcher/output_relay.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace ptrun::launcher {

void write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

struct OutputRelay::Impl : std::enable_shared_from_this<OutputRelay::Impl> {
    Impl(boost::asio::io_context& io, int fd, RelayTarget t) : pipe(io, fd), target(std::move(t)) {}

    boost::asio::posix::stream_descriptor pipe;
    RelayTarget target;
    std::array<char, 65536> buffer{};
    std::string partial;  // console bytes after the last newline
    bool closed = false;

    void consume(const char* data, std::size_t size) {
        if (target.log_fd >= 0) write_all(target.log_fd, data, size);
        if (target.console_fd < 0) return;
        std::string out;
        std::size_t start = 0;
        for (std::size_t i = 0; i < size; ++i) {
            if (data[i] != '\n') continue;
            out += target.prefix;
            out += partial;
            out.append(data + start, i + 1 - start);
            partial.clear();
            start = i + 1;
        }
        partial.append(data + start, size - start);
        if (!out.empty()) write_all(target.console_fd, out.data(), out.size());
    }

    void read_next() {
        pipe.async_read_some(boost::asio::buffer(buffer), [self = shared_from_this(), this](
                                                               boost::system::error_code ec, std::size_t n) {
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
        if (!partial.empty() && target.console_fd >= 0) {
            std::string line = target.prefix + partial + "\n";
            write_all(target.console_fd, line.data(), line.size());
            partial.clear();
        }
        boost::system::error_code ignored;
        pipe.close(ignored);
        if (target.log_fd >= 0) ::close(target.log_fd);
        target.log_fd = -1;
    }
};

OutputRelay::OutputRelay(boost::asio::io_context& io, int read_fd, RelayTarget target)
    : impl_(std::make_shared<Impl>(io, read_fd, std::move(target))) {
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
