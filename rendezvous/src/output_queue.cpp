#include "output_queue.hpp"

#include <algorithm>

namespace ptrun::rdzv::detail {
namespace {
/// Replies smaller than this are packed; larger ones keep their own string.
constexpr std::size_t kPackBelow = 16 * 1024;
constexpr std::size_t kFirstPack = 256;

/// What a string holds on the heap (0 while its inline buffer holds it).
std::size_t heap_bytes(const std::string& s) noexcept {
    static const std::size_t inline_capacity = std::string().capacity();
    return s.capacity() > inline_capacity ? s.capacity() : 0;
}
}  // namespace

void OutputQueue::push(Outgoing&& reply) {
    push_owned(std::move(reply.bytes));
    for (auto& part : reply.shared) {
        push_blob(part.blob);
        push_owned(std::move(part.after));
    }
}

void OutputQueue::push_owned(std::string&& bytes) {
    if (bytes.empty()) return;
    const std::size_t n = bytes.size();
    const bool owned_tail = !chunks_.empty() && !chunks_.back().blob;
    if (owned_tail) {
        std::string& tail = chunks_.back().owned;
        if (tail.capacity() - tail.size() >= n) {  // no reallocation: front_written_ stays valid
            tail.append(bytes);
            payload_ += n;
            return;
        }
    }
    Chunk chunk;
    if (n >= kPackBelow || !owned_tail) {
        // Its own string, as it came: a big reply, or the first bytes after a referenced value
        // (the length field of the next one, in a MULTI_GET: often short enough to need no heap).
        chunk.owned = std::move(bytes);
    } else {
        // A full packing chunk: the next is twice as large, so a flood of tiny replies costs
        // about its payload, in few chunks.
        chunk.owned.reserve(
            std::max(n, std::clamp(2 * chunks_.back().owned.capacity(), kFirstPack, kPackBelow)));
        chunk.owned.append(bytes);
    }
    const std::size_t cost = heap_bytes(chunk.owned) + kChunkCost;
    chunks_.push_back(std::move(chunk));
    payload_ += n;
    cost_ += cost;
    budget_.charge(cost);
}

void OutputQueue::push_blob(const BlobPtr& blob) {
    if (blob->bytes.empty()) return;
    chunks_.push_back(Chunk{{}, blob});
    payload_ += blob->bytes.size();
    referenced_ += blob->bytes.size();
    cost_ += kChunkCost;
    budget_.charge(kChunkCost);
    if (blob->queued++ == 0) budget_.charge(blob->bytes.capacity());
}

void OutputQueue::pop_front() noexcept {
    Chunk& chunk = chunks_.front();
    payload_ -= chunk.size() - front_written_;
    front_written_ = 0;
    std::size_t cost = kChunkCost;
    if (chunk.blob) {
        referenced_ -= chunk.blob->bytes.size();
        if (--chunk.blob->queued == 0) budget_.release(chunk.blob->bytes.capacity());
    } else {
        cost += heap_bytes(chunk.owned);
    }
    cost_ -= cost;
    budget_.release(cost);
    chunks_.pop_front();
}

std::size_t OutputQueue::gather(iovec* iov, std::size_t max, std::size_t max_bytes) const noexcept {
    std::size_t count = 0;
    std::size_t bytes = 0;
    for (auto it = chunks_.begin(); it != chunks_.end() && count < max && bytes < max_bytes;
         ++it, ++count) {
        const std::size_t skip = count == 0 ? front_written_ : 0;
        const char* data = it->blob ? it->blob->bytes.data() : it->owned.data();
        iov[count].iov_base = const_cast<char*>(data) + skip;
        iov[count].iov_len = std::min(it->size() - skip, max_bytes - bytes);
        bytes += iov[count].iov_len;
    }
    return count;
}

void OutputQueue::consume(std::size_t n) noexcept {
    while (n > 0 && !chunks_.empty()) {
        const std::size_t rest = chunks_.front().size() - front_written_;
        if (n < rest) {
            front_written_ += n;
            payload_ -= n;
            return;
        }
        n -= rest;
        payload_ -= rest;
        front_written_ += rest;
        pop_front();
    }
}

void OutputQueue::clear() noexcept {
    while (!chunks_.empty()) pop_front();
}

}  // namespace ptrun::rdzv::detail
