#pragma once
/// An spdlog sink that writes ptrun's own log lines through a ConsoleStream (console_stream.hpp),
/// so that logging never blocks on a reader who stopped reading; coloured by level on a terminal.

#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>

#include "ptrun/launcher/console_stream.hpp"

namespace ptrun::launcher {

class ConsoleLogSink final : public spdlog::sinks::base_sink<std::mutex> {
  public:
    /// Colours when the stream's fd is a terminal whose TERM is not "dumb" (as spdlog's own).
    explicit ConsoleLogSink(std::shared_ptr<ConsoleStream> stream);

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override;
    void flush_() override {}

  private:
    std::shared_ptr<ConsoleStream> stream_;
    bool colors_ = false;
};

}  // namespace ptrun::launcher
