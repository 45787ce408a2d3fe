#pragma once
/// SharedSegment: a named POSIX shared-memory file mapped into this process (RAII).

#include <cstddef>
#include <string>

namespace ptrun::ddp::detail {

/// One mapping of a /dev/shm file. The creator unlinks the name once every process has mapped it
/// (unlink()); the mapping lives until destruction. Pages are populated at map time, because this
/// machine faults pages slowly and collectives must not pay for it.
class SharedSegment {
  public:
    /// Creates `name` (O_EXCL, mode 0600) of `bytes` and maps it. Throws CollectiveError.
    static SharedSegment create(const std::string& name, std::size_t bytes);
    /// Opens and maps an existing `name`; throws CollectiveError if absent or smaller than `bytes`.
    static SharedSegment open(const std::string& name, std::size_t bytes);
    /// Another handle on `mapping`'s memory that never unmaps or unlinks it; `mapping` must outlive
    /// it. For ranks run as threads over one mapping in tests (ThreadSanitizer tracks memory by
    /// address, so it sees nothing between two mappings of one file).
    static SharedSegment view(const SharedSegment& mapping);

    SharedSegment() = default;
    SharedSegment(SharedSegment&& other) noexcept;
    SharedSegment& operator=(SharedSegment&& other) noexcept;
    SharedSegment(const SharedSegment&) = delete;
    SharedSegment& operator=(const SharedSegment&) = delete;
    /// Unmaps; unlinks the name too if this process created it and has not unlinked it yet.
    ~SharedSegment();

    /// Removes the name from /dev/shm (the mapping stays valid). Idempotent, never throws.
    void unlink() noexcept;

    void* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    const std::string& name() const noexcept { return name_; }

  private:
    SharedSegment(std::string name, void* data, std::size_t size, bool owner, bool mapped = true);
    void release() noexcept;

    std::string name_;
    void* data_ = nullptr;
    std::size_t size_ = 0;
    bool owner_ = false;  ///< created here and not yet unlinked
    bool mapped_ = true;  ///< data_ is this handle's own mapping (not a view())
};

}  // namespace ptrun::ddp::detail
