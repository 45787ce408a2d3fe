#pragma once
/// Test helper: a logger whose lines a test can wait for (the server logs from its own thread).

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ptrun::rdzv::test {

/// Keeps every line logged through logger(), at every level.
class LogCapture {
  public:
    LogCapture()
        : sink_(std::make_shared<Sink>()),
          logger_(std::make_shared<spdlog::logger>("capture", sink_)) {
        logger_->set_level(spdlog::level::trace);
    }

    const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }

    /// The first line containing every one of `needles`, waiting up to `timeout` for it; empty
    /// if none came.
    std::string wait_for(const std::vector<std::string>& needles,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
        return sink_->wait_for(needles, timeout);
    }

    /// True once `count` lines contain `needle`, waiting up to `timeout`.
    bool wait_for_count(const std::string& needle, std::size_t count,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
        return sink_->wait_for_count(needle, count, timeout);
    }

  private:
    class Sink : public spdlog::sinks::base_sink<std::mutex> {
      public:
        std::string wait_for(const std::vector<std::string>& needles,
                             std::chrono::milliseconds timeout) {
            std::string found;
            std::unique_lock lock(mutex_);
            changed_.wait_for(lock, timeout, [&] {
                for (const auto& line : lines_) {
                    bool all = true;
                    for (const auto& n : needles) all = all && line.find(n) != std::string::npos;
                    if (all) found = line;
                    if (all) return true;
                }
                return false;
            });
            return found;
        }

        bool wait_for_count(const std::string& needle, std::size_t count,
                            std::chrono::milliseconds timeout) {
            std::unique_lock lock(mutex_);
            return changed_.wait_for(lock, timeout, [&] {
                std::size_t n = 0;
                for (const auto& line : lines_) n += line.find(needle) != std::string::npos;
                return n >= count;
            });
        }

      protected:
        void sink_it_(const spdlog::details::log_msg& msg) override {
            lines_.emplace_back(msg.payload.data(), msg.payload.size());
            changed_.notify_all();
        }
        void flush_() override {}

      private:
        std::vector<std::string> lines_;
        std::condition_variable changed_;
    };

    std::shared_ptr<Sink> sink_;
    std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace ptrun::rdzv::test
