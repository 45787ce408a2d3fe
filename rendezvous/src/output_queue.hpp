#pragma once
/// OutputQueue: one connection's replies not yet written, charged to the server's BufferBudget.

#include <sys/uio.h>

#include <cstddef>
#include <deque>
#include <string>

#include "buffer_budget.hpp"
#include "reply.hpp"

namespace ptrun::rdzv::detail {

/// Bytes waiting for a client, in order. Small replies are packed into shared chunks (a flood of
/// 1-byte replies costs about 1 byte each, not a std::string each); stored values are kept by
/// reference. Everything it holds is charged to `budget` at its real cost (chunk capacity plus
/// bookkeeping; a referenced value once, however many queues hold it) and released when written
/// or cleared. Server thread only.
class OutputQueue {
  public:
    explicit OutputQueue(BufferBudget& budget) noexcept : budget_(budget) {}
    ~OutputQueue() { clear(); }
    OutputQueue(const OutputQueue&) = delete;
    OutputQueue& operator=(const OutputQueue&) = delete;

    /// Appends `reply` (taken apart: its strings are moved or packed, its values referenced).
    void push(Outgoing&& reply);
    /// Fills `iov` with the next unwritten bytes, at most `max` buffers and about `max_bytes`
    /// bytes in all; how many buffers it filled.
    std::size_t gather(iovec* iov, std::size_t max, std::size_t max_bytes) const noexcept;
    /// `n` bytes (at most payload()) were written: drops them and releases what they cost.
    void consume(std::size_t n) noexcept;
    /// Drops everything and releases its cost.
    void clear() noexcept;

    bool empty() const noexcept { return chunks_.empty(); }
    /// Bytes not yet written.
    std::size_t payload() const noexcept { return payload_; }
    /// What this queue keeps alive, counting every referenced value in full (to rank offenders).
    std::size_t held() const noexcept { return cost_ + referenced_; }

  private:
    struct Chunk {
        std::string owned;  ///< when !blob
        BlobPtr blob;
        std::size_t size() const noexcept { return blob ? blob->bytes.size() : owned.size(); }
    };
    static constexpr std::size_t kChunkCost = sizeof(Chunk);

    void push_owned(std::string&& bytes);
    void push_blob(const BlobPtr& blob);
    void pop_front() noexcept;

    BufferBudget& budget_;
    std::deque<Chunk> chunks_;
    std::size_t front_written_ = 0;  ///< bytes of chunks_.front() already written
    std::size_t payload_ = 0;
    std::size_t cost_ = 0;        ///< charged for chunks (capacity + bookkeeping)
    std::size_t referenced_ = 0;  ///< sizes of the values referenced
};

}  // namespace ptrun::rdzv::detail
