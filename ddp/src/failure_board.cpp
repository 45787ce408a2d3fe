#include "failure_board.hpp"

#include <algorithm>
#include <charconv>

namespace ptrun::ddp::detail {

FailureBoard::FailureBoard(std::shared_ptr<rdzv::Store> store, std::string prefix)
    : store_(std::move(store)), prefix_(std::move(prefix)) {}

std::string FailureBoard::key(int node) const { return prefix_ + "/" + std::to_string(node); }

void FailureBoard::post(int node, int culprit, std::string_view what) noexcept {
    if (!store_) return;
    try {
        store_->set(key(node), std::to_string(culprit) + "\n" + std::string(what));
    } catch (...) {  // the store is gone too: the link alone will have to tell the story
    }
}

std::optional<FailureNote> FailureBoard::read(int node, std::chrono::milliseconds wait) noexcept {
    if (!store_) return std::nullopt;
    try {
        const std::string k = key(node);
        if (wait.count() <= 0 && !store_->check({k})) return std::nullopt;
        const std::string value = store_->get(k, std::max(wait, std::chrono::milliseconds(1)));
        const auto newline = value.find('\n');
        if (newline == std::string::npos) return std::nullopt;
        FailureNote note;
        const char* digits_end = value.data() + newline;
        const auto [end, ec] = std::from_chars(value.data(), digits_end, note.culprit);
        if (ec != std::errc() || end != digits_end) return std::nullopt;
        note.what = value.substr(newline + 1);
        return note;
    } catch (...) {  // no note in time, or the store failed
        return std::nullopt;
    }
}

}  // namespace ptrun::ddp::detail
