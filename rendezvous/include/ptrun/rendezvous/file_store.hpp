#pragma once
/// FileStore: the store verbs over one file that processes on several hosts share through a
/// shared file system, as torch's FileStore: the c10d rendezvous's `store_type=file`. The file
/// is a log of records appended under an exclusive flock(2) (NFS turns it into a POSIX lock
/// every client honours); each handle replays what others appended before it answers. Blocking
/// calls wake on inotify(7) when the file changes on this host, and look again every
/// `recheck`: a write from another host of a network file system raises no inotify event here.
/// Once the log is four times its live data and over 1 MiB, the writer holding the lock
/// rewrites it in place with one record per key; the others notice the new epoch in its header.

#include <memory>
#include <string>

#include "ptrun/rendezvous/store.hpp"

namespace ptrun::rdzv {

struct FileStoreOptions {
    std::string path;  ///< created (mode 0600) when absent; its directory must exist
    /// How often a blocking call reads the file again without an inotify event.
    Duration recheck{100};
};

class FileStore final : public Store {
  public:
    /// Opens (creating) the file and starts watching it. Throws StoreError naming the path when
    /// it cannot be opened or is not a ptrun rendezvous file.
    explicit FileStore(FileStoreOptions options);
    ~FileStore() override;
    FileStore(const FileStore&) = delete;
    FileStore& operator=(const FileStore&) = delete;

    void set(std::string_view key, std::string_view value) override;
    std::string get(std::string_view key, Duration timeout) override;
    std::int64_t add(std::string_view key, std::int64_t delta) override;
    std::string compare_set(std::string_view key, std::string_view expected,
                            std::string_view desired) override;
    bool check(const std::vector<std::string>& keys) override;
    void wait(const std::vector<std::string>& keys, Duration timeout) override;
    bool delete_key(std::string_view key) override;
    std::int64_t num_keys() override;
    void append(std::string_view key, std::string_view value) override;
    std::vector<std::string> multi_get(const std::vector<std::string>& keys,
                                       Duration timeout) override;
    void multi_set(const std::vector<std::string>& keys,
                   const std::vector<std::string>& values) override;
    void queue_push(std::string_view key, std::string_view value) override;
    std::string queue_pop(std::string_view key, Duration timeout) override;
    std::int64_t queue_len(std::string_view key) override;
    std::vector<std::string> queue_pop_batch(std::string_view key, std::size_t max,
                                             Duration timeout) override;
    std::vector<std::string> list_keys() override;
    void interrupt() noexcept override;

    /// Deletes every key starting with `prefix` and every queue named so, in one locked write;
    /// returns how many went.
    std::size_t delete_prefix(std::string_view prefix);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ptrun::rdzv
