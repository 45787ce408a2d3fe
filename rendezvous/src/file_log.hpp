#pragma once
/// FileLog: the records of a FileStore's file and the state they build (keys and queues). No
/// I/O: FileStore reads the file's bytes into it and writes the records it encodes.
///
/// File layout: a 16-byte header ("PTRUNFS1" and the file's epoch, a little-endian u64 that
/// each rewrite increments), then records: one op byte ('S' set, 'A' append, 'D' delete,
/// 'Q' queue push, 'P' queue pop), the key's and the value's lengths (little-endian u32), the
/// key, the value.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>

namespace ptrun::rdzv::detail {

inline constexpr std::size_t kFileHeaderBytes = 16;
inline constexpr std::size_t kMaxFileKeyBytes = 64 * 1024;
inline constexpr std::size_t kMaxFileValueBytes = 16 * 1024 * 1024;

enum class FileOp : char { Set = 'S', Append = 'A', Delete = 'D', Push = 'Q', Pop = 'P' };

class FileLog {
  public:
    std::map<std::string, std::string, std::less<>> values;
    std::map<std::string, std::deque<std::string>, std::less<>> queues;

    /// The header of a file at `epoch`.
    static std::string header(std::uint64_t epoch);
    /// The epoch in `bytes` (at least kFileHeaderBytes); throws StoreError naming `path` when
    /// they are not a ptrun rendezvous file's header.
    static std::uint64_t epoch_of(std::string_view bytes, const std::string& path);
    /// One record.
    static std::string record(FileOp op, std::string_view key, std::string_view value = {});

    /// Applies the whole records at the start of `bytes` and returns how many bytes they took
    /// (a torn record at the end, from a writer that died, is left out). Throws StoreError
    /// naming `path` and `offset` on a record that cannot be one.
    std::size_t apply_records(std::string_view bytes, const std::string& path,
                              std::uint64_t offset);
    /// Applies one record's meaning.
    void apply(FileOp op, std::string key, std::string value);
    /// Bytes of the live keys and queued values (what a rewrite keeps).
    std::size_t live_bytes() const noexcept { return live_; }
    /// Header and one record per key and queued value: the file rewritten at `epoch`.
    std::string snapshot(std::uint64_t epoch) const;
    /// Forgets everything (the file was rewritten).
    void clear() noexcept;

  private:
    std::size_t live_ = 0;
};

}  // namespace ptrun::rdzv::detail
