#include "ptrun/rendezvous/file_store.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "file_log.hpp"
#include "ptrun/rendezvous/counter_text.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "ptrun/sys/fd.hpp"

namespace ptrun::rdzv {
namespace {

using Clock = std::chrono::steady_clock;
using detail::FileLog;
using detail::FileOp;

/// The log is rewritten once it is this large and kCompactRatio times its live data.
constexpr std::uint64_t kCompactAtLeast = 1 << 20;
constexpr std::uint64_t kCompactRatio = 4;
/// A file larger than this is refused (the rendezvous's keys take kilobytes).
constexpr std::uint64_t kMaxFileBytes = 256ull << 20;

std::string errno_text() { return std::strerror(errno); }

/// flock(2) held for one call; the destructor unlocks.
class FileLock {
  public:
    FileLock(int fd, const std::string& path) : fd_(fd) {
        while (::flock(fd_, LOCK_EX) != 0) {
            if (errno != EINTR)
                throw StoreError("rendezvous file " + path + ": lock: " + errno_text());
        }
    }
    ~FileLock() { ::flock(fd_, LOCK_UN); }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

  private:
    int fd_;
};

std::string directory_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

struct FileStore::Impl {
    explicit Impl(FileStoreOptions options) : o(std::move(options)) {
        fd = sys::Fd(::open(o.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
        if (!fd) {
            throw StoreError("rendezvous file " + o.path + ": cannot open: " + errno_text() +
                             " (expected a path in a directory every node shares)");
        }
        wake = sys::Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        if (!wake) throw StoreError("rendezvous file " + o.path + ": eventfd: " + errno_text());
        // The directory is watched, not the file: a watch on the file would also do, but the
        // directory's events carry the name, and the file may be created after the watch.
        inotify = sys::Fd(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
        if (inotify) {
            if (::inotify_add_watch(inotify.get(), directory_of(o.path).c_str(),
                                    IN_MODIFY | IN_CLOSE_WRITE) < 0) {
                inotify.reset();  // rechecks alone, every o.recheck
            }
        }
        std::lock_guard guard(mu);
        FileLock lock(fd.get(), o.path);
        sync();
    }

    FileStoreOptions o;
    sys::Fd fd;
    sys::Fd wake;     ///< interrupt() writes it
    sys::Fd inotify;  ///< the file's directory; invalid: none (rechecks only)
    std::atomic<bool> interrupted{false};
    std::mutex mu;  ///< one call at a time reads and writes log, epoch, offset
    FileLog log;
    std::uint64_t epoch = 0;   ///< of the file as last read (0: never read)
    std::uint64_t offset = 0;  ///< bytes of the file already applied to `log`

    void check_live(std::string_view operation) const {
        if (interrupted) {
            throw ConnectionLost(std::string(operation) + ": store handle interrupted");
        }
    }

    std::string read_at(std::uint64_t at, std::uint64_t size) {
        std::string bytes(size, '\0');
        std::size_t done = 0;
        while (done < size) {
            const auto n =
                ::pread(fd.get(), bytes.data() + done, size - done, static_cast<off_t>(at + done));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw StoreError("rendezvous file " + o.path + ": read: " + errno_text());
            if (n == 0) break;
            done += static_cast<std::size_t>(n);
        }
        bytes.resize(done);
        return bytes;
    }

    void write_at(std::uint64_t at, std::string_view bytes) {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const auto n = ::pwrite(fd.get(), bytes.data() + done, bytes.size() - done,
                                    static_cast<off_t>(at + done));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw StoreError("rendezvous file " + o.path + ": write: " + errno_text());
            done += static_cast<std::size_t>(n);
        }
    }

    std::uint64_t file_size() {
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0)
            throw StoreError("rendezvous file " + o.path + ": stat: " + errno_text());
        return static_cast<std::uint64_t>(st.st_size);
    }

    /// Under the file lock: brings `log` up to the file's end.
    void sync() {
        auto size = file_size();
        if (size < detail::kFileHeaderBytes) {  // new, or its creator died writing the header
            if (::ftruncate(fd.get(), 0) != 0)
                throw StoreError("rendezvous file " + o.path + ": truncate: " + errno_text());
            write_at(0, FileLog::header(1));
            size = detail::kFileHeaderBytes;
        }
        if (size > kMaxFileBytes) {
            throw StoreError("rendezvous file " + o.path + ": " + std::to_string(size) +
                             " bytes, over the " + std::to_string(kMaxFileBytes) +
                             " a rendezvous file may hold");
        }
        const auto e = FileLog::epoch_of(read_at(0, detail::kFileHeaderBytes), o.path);
        if (e != epoch || size < offset) {  // rewritten since: read it from its start
            log.clear();
            epoch = e;
            offset = detail::kFileHeaderBytes;
        }
        if (size == offset) return;
        const auto bytes = read_at(offset, size - offset);
        const auto used = log.apply_records(bytes, o.path, offset);
        offset += used;
        if (used < bytes.size() && ::ftruncate(fd.get(), static_cast<off_t>(offset)) != 0)
            throw StoreError("rendezvous file " + o.path + ": truncate: " + errno_text());
    }

    /// Under the file lock, after sync(): appends `records` and applies them.
    void write(const std::string& records) {
        write_at(offset, records);
        log.apply_records(records, o.path, offset);
        offset += records.size();
        if (offset >= kCompactAtLeast && offset >= kCompactRatio * (log.live_bytes() + 1)) {
            const auto snapshot = log.snapshot(epoch + 1);
            write_at(0, snapshot);
            if (::ftruncate(fd.get(), static_cast<off_t>(snapshot.size())) != 0)
                throw StoreError("rendezvous file " + o.path + ": truncate: " + errno_text());
            ++epoch;
            offset = snapshot.size();
        }
    }

    /// Runs `f` on the synced log with the file locked.
    template <class F>
    auto locked(std::string_view operation, F f) {
        std::lock_guard guard(mu);
        check_live(operation);
        FileLock lock(fd.get(), o.path);
        sync();
        return f();
    }

    /// Runs `take` on the synced log once `ready()` holds, at most `timeout` (StoreTimeout
    /// naming `keys`).
    template <class Ready, class Take>
    auto blocking(std::string_view operation, const std::vector<std::string>& keys,
                  Duration timeout, Ready ready, Take take) {
        const auto start = Clock::now();
        const auto deadline = start + timeout;
        while (true) {
            {
                std::lock_guard guard(mu);
                check_live(operation);
                FileLock lock(fd.get(), o.path);
                sync();
                if (ready()) return take();
            }
            const auto now = Clock::now();
            if (now >= deadline) {
                throw StoreTimeout(operation, keys,
                                   std::chrono::duration_cast<Duration>(now - start));
            }
            wait_for_change(std::min<Clock::time_point>(deadline, now + o.recheck));
            check_live(operation);
        }
    }

    /// Sleeps until this host writes into the file's directory, interrupt(), or `until`.
    void wait_for_change(Clock::time_point until) {
        pollfd fds[2] = {{wake.get(), POLLIN, 0}, {inotify.get(), POLLIN, 0}};
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
        const int n =
            ::poll(fds, inotify ? 2 : 1, static_cast<int>(std::max<long>(0, left.count())));
        if (n > 0 && inotify && (fds[1].revents & POLLIN) != 0) {
            alignas(inotify_event) char buf[4096];
            while (::read(inotify.get(), buf, sizeof buf) > 0) {
            }
        }
    }

    bool exists(const std::string& key) const {
        if (log.values.count(key) != 0) return true;
        auto q = log.queues.find(key);
        return q != log.queues.end() && !q->second.empty();
    }

    bool all_exist(const std::vector<std::string>& keys) const {
        return std::all_of(keys.begin(), keys.end(), [this](const auto& k) { return exists(k); });
    }

    std::vector<std::string> pop(std::string_view operation, std::string_view key, std::size_t max,
                                 Duration timeout) {
        const std::string k(key);
        return blocking(
            operation, {k}, timeout, [&] { return log.queues.count(k) != 0; },
            [&] {
                const auto& q = log.queues.find(k)->second;
                const std::size_t count = std::min(q.size(), std::max<std::size_t>(max, 1));
                std::vector<std::string> out(q.begin(), q.begin() + static_cast<long>(count));
                std::string records;
                for (std::size_t i = 0; i < count; ++i) records += FileLog::record(FileOp::Pop, k);
                write(records);
                return out;
            });
    }
};

FileStore::FileStore(FileStoreOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
FileStore::~FileStore() = default;

void FileStore::interrupt() noexcept {
    impl_->interrupted = true;
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(impl_->wake.get(), &one, sizeof one);
}

void FileStore::set(std::string_view key, std::string_view value) {
    impl_->locked("set", [&] { impl_->write(FileLog::record(FileOp::Set, key, value)); });
}

std::string FileStore::get(std::string_view key, Duration timeout) {
    const std::string k(key);
    return impl_->blocking(
        "get", {k}, timeout, [&] { return impl_->exists(k); },
        [&] {
            auto it = impl_->log.values.find(k);
            return it == impl_->log.values.end() ? std::string() : it->second;
        });
}

std::int64_t FileStore::add(std::string_view key, std::int64_t delta) {
    return impl_->locked("add", [&] {
        auto it = impl_->log.values.find(key);
        std::int64_t current = 0;
        if (it != impl_->log.values.end()) {
            auto v = detail::parse_counter(it->second);
            if (!v) {
                throw StoreError("add: value of key " + describe_keys({std::string(key)}) +
                                 " is not a decimal integer");
            }
            current = *v;
        }
        std::int64_t result = 0;
        if (__builtin_add_overflow(current, delta, &result)) {
            throw StoreError("add: counter at key " + describe_keys({std::string(key)}) +
                             " would overflow");
        }
        impl_->write(FileLog::record(FileOp::Set, key, std::to_string(result)));
        return result;
    });
}

std::string FileStore::compare_set(std::string_view key, std::string_view expected,
                                   std::string_view desired) {
    return impl_->locked("compare_set", [&] {
        auto it = impl_->log.values.find(key);
        if (it == impl_->log.values.end()) {
            if (!expected.empty()) return std::string(expected);
        } else if (it->second != expected) {
            return it->second;
        }
        impl_->write(FileLog::record(FileOp::Set, key, desired));
        return std::string(desired);
    });
}

bool FileStore::check(const std::vector<std::string>& keys) {
    return impl_->locked("check", [&] { return impl_->all_exist(keys); });
}

void FileStore::wait(const std::vector<std::string>& keys, Duration timeout) {
    impl_->blocking(
        "wait", keys, timeout, [&] { return impl_->all_exist(keys); }, [] {});
}

bool FileStore::delete_key(std::string_view key) {
    return impl_->locked("delete_key", [&] {
        if (impl_->log.values.count(key) == 0) return false;
        impl_->write(FileLog::record(FileOp::Delete, key));
        return true;
    });
}

std::int64_t FileStore::num_keys() {
    return impl_->locked("num_keys",
                         [&] { return static_cast<std::int64_t>(impl_->log.values.size()); });
}

void FileStore::append(std::string_view key, std::string_view value) {
    impl_->locked("append", [&] {
        const auto it = impl_->log.values.find(key);
        const auto had = it == impl_->log.values.end() ? 0 : it->second.size();
        if (had + value.size() > detail::kMaxFileValueBytes) {
            throw StoreError("append: value of key " + describe_keys({std::string(key)}) +
                             " would pass " + std::to_string(detail::kMaxFileValueBytes) +
                             " bytes");
        }
        impl_->write(FileLog::record(FileOp::Append, key, value));
    });
}

std::vector<std::string> FileStore::multi_get(const std::vector<std::string>& keys,
                                              Duration timeout) {
    return impl_->blocking(
        "multi_get", keys, timeout, [&] { return impl_->all_exist(keys); },
        [&] {
            std::vector<std::string> out;
            out.reserve(keys.size());
            for (const auto& k : keys) {
                auto it = impl_->log.values.find(k);
                out.push_back(it == impl_->log.values.end() ? std::string() : it->second);
            }
            return out;
        });
}

void FileStore::multi_set(const std::vector<std::string>& keys,
                          const std::vector<std::string>& values) {
    if (keys.size() != values.size()) {
        throw StoreError("multi_set: " + std::to_string(keys.size()) + " keys but " +
                         std::to_string(values.size()) + " values");
    }
    impl_->locked("multi_set", [&] {
        std::string records;
        for (std::size_t i = 0; i < keys.size(); ++i)
            records += FileLog::record(FileOp::Set, keys[i], values[i]);
        impl_->write(records);
    });
}

void FileStore::queue_push(std::string_view key, std::string_view value) {
    impl_->locked("queue_push", [&] { impl_->write(FileLog::record(FileOp::Push, key, value)); });
}

std::string FileStore::queue_pop(std::string_view key, Duration timeout) {
    return std::move(impl_->pop("queue_pop", key, 1, timeout).front());
}

std::vector<std::string> FileStore::queue_pop_batch(std::string_view key, std::size_t max,
                                                    Duration timeout) {
    return impl_->pop("queue_pop_batch", key, max, timeout);
}

std::int64_t FileStore::queue_len(std::string_view key) {
    return impl_->locked("queue_len", [&] {
        auto q = impl_->log.queues.find(key);
        return q == impl_->log.queues.end() ? std::int64_t{0}
                                            : static_cast<std::int64_t>(q->second.size());
    });
}

std::vector<std::string> FileStore::list_keys() {
    return impl_->locked("list_keys", [&] {
        std::vector<std::string> out;
        out.reserve(impl_->log.values.size());
        for (const auto& kv : impl_->log.values) out.push_back(kv.first);
        return out;
    });
}

std::size_t FileStore::delete_prefix(std::string_view prefix) {
    return impl_->locked("delete_prefix", [&] {
        std::string records;
        std::size_t count = 0;
        for (auto it = impl_->log.values.lower_bound(prefix);
             it != impl_->log.values.end() && it->first.rfind(prefix, 0) == 0; ++it, ++count)
            records += FileLog::record(FileOp::Delete, it->first);
        for (auto it = impl_->log.queues.lower_bound(prefix);
             it != impl_->log.queues.end() && it->first.rfind(prefix, 0) == 0; ++it) {
            for (std::size_t i = 0; i < it->second.size(); ++i)
                records += FileLog::record(FileOp::Pop, it->first);
            ++count;
        }
        if (!records.empty()) impl_->write(records);
        return count;
    });
}

}  // namespace ptrun::rdzv
