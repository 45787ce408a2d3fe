#include "ptrun/launcher/output/console_log_sink.hpp"

#include <unistd.h>

#include <string_view>

#include "ptrun/launcher/output/printable.hpp"

namespace ptrun::launcher {
namespace {

std::string_view level_color(spdlog::level::level_enum level) {
    switch (level) {
        case spdlog::level::trace:
            return "\033[37m";
        case spdlog::level::debug:
            return "\033[36m";
        case spdlog::level::info:
            return "\033[32m";
        case spdlog::level::warn:
            return "\033[33m\033[1m";
        case spdlog::level::err:
            return "\033[31m\033[1m";
        case spdlog::level::critical:
            return "\033[1m\033[41m";
        default:
            return {};
    }
}

}  // namespace

ConsoleLogSink::ConsoleLogSink(std::shared_ptr<ConsoleStream> stream, std::string_view term,
                               std::shared_ptr<RunLog> run_log)
    : stream_(std::move(stream)), run_log_(std::move(run_log)) {
    colors_ = ::isatty(stream_->fd()) == 1 && !term.empty() && term != "dumb";
}

void ConsoleLogSink::set_status(const std::string& text) {
    if (!colors_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = text;
    stream_->write_own("\r" + status_ + "\033[K");
}

void ConsoleLogSink::clear_status() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.empty()) return;
    status_.clear();
    stream_->write_own("\r\033[K");
}

void ConsoleLogSink::sink_it_(const spdlog::details::log_msg& raw) {
    // A message carries values from outside (a worker's scope name, a path): a newline or an
    // escape in them must not forge a line of ptrun's or drive the terminal.
    const std::string payload = printable({raw.payload.data(), raw.payload.size()});
    spdlog::details::log_msg msg = raw;
    msg.payload = payload;
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    std::string_view text(formatted.data(), formatted.size());
    if (run_log_) run_log_->write(text);
    if (msg.level < console_level_) return;  // the run log's alone
    if (status_.empty() && (!colors_ || msg.color_range_end <= msg.color_range_start)) {
        stream_->write_own(text);
        return;
    }
    std::string out;
    out.reserve(text.size() + status_.size() + 24);
    if (!status_.empty()) out.append("\r\033[K");  // the line takes the status line's place
    if (colors_ && msg.color_range_end > msg.color_range_start) {
        out.append(text.substr(0, msg.color_range_start));
        out.append(level_color(msg.level));
        out.append(text.substr(msg.color_range_start, msg.color_range_end - msg.color_range_start));
        out.append("\033[m");
        out.append(text.substr(msg.color_range_end));
    } else {
        out.append(text);
    }
    if (!status_.empty()) out.append("\r" + status_ + "\033[K");  // and the status goes below
    stream_->write_own(out);
}

}  // namespace ptrun::launcher
