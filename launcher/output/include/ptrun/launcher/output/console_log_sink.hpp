#pragma once
/// An spdlog sink that writes ptrun's own log lines through a ConsoleStream (console_stream.hpp),
/// so that logging never blocks on a reader who stopped reading; coloured by level on a terminal.
/// On a terminal it also carries one status line that updates in place (waiting for nodes): a
/// log line first clears it, and it is drawn again below, whichever thread logs.

#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "ptrun/launcher/output/console_stream.hpp"

namespace ptrun::launcher {

class ConsoleLogSink final : public spdlog::sinks::base_sink<std::mutex> {
  public:
    /// Colours when the stream's fd is a terminal and `term` (ptrun's TERM, "" when unset) is
    /// neither empty nor "dumb" (as spdlog's own sinks decide).
    /// `run_log` (may be null) gets every line too, without colours or the status line; lines
    /// below the console level (set_console_level) go to the run log alone.
    ConsoleLogSink(std::shared_ptr<ConsoleStream> stream, std::string_view term,
                   std::shared_ptr<RunLog> run_log = nullptr);

    /// Lines below `level` go to the run log alone (default info; LOGLEVEL sets it).
    void set_console_level(spdlog::level::level_enum level) { console_level_ = level; }
    /// True on a terminal that takes escapes: set_status draws there, elsewhere it does nothing.
    bool shows_status() const { return colors_; }
    /// Shows `text` as the status line, replacing the previous one.
    void set_status(const std::string& text);
    /// Removes the status line.
    void clear_status();

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override;
    void flush_() override {}

  private:
    std::shared_ptr<ConsoleStream> stream_;
    std::shared_ptr<RunLog> run_log_;
    bool colors_ = false;
    spdlog::level::level_enum console_level_ = spdlog::level::info;
    std::string status_;  ///< the status line, "" for none
};

}  // namespace ptrun::launcher
