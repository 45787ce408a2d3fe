#include "ptrun/watchdog/log_lines.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

#include "ptrun/sys/fd.hpp"

namespace ptrun::watchdog {
namespace {

/// One sidecar record: the log's bytes from `offset` on were captured at `unix_us`.
struct TimeRecord {
    std::uint64_t offset = 0;
    std::int64_t unix_us = 0;
};
static_assert(sizeof(TimeRecord) == 16);

/// A decimal unsigned number of at most `max_digits` digits, all of `text`; nullopt otherwise.
std::optional<std::uint64_t> decimal(std::string_view text, std::size_t max_digits) {
    if (text.empty() || text.size() > max_digits) return std::nullopt;
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

/// Reads the records of a times sidecar forward from the last one at or before an offset,
/// a block at a time; a missing or unreadable sidecar knows no times.
class TimesCursor {
  public:
    explicit TimesCursor(const std::string& path)
        : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) {
        struct stat st {};
        if (fd_ && ::fstat(fd_.get(), &st) == 0)
            count_ = static_cast<std::uint64_t>(st.st_size) / sizeof(TimeRecord);
    }

    /// The capture time of the byte at `offset`: offsets must come in increasing order.
    std::optional<std::int64_t> at(std::uint64_t offset) {
        if (count_ == 0) return std::nullopt;
        if (!positioned_) {
            positioned_ = true;
            index_ = last_at_or_before(offset);
        }
        if (index_ < 0) {
            // Bytes before the first record came before ptrun stamped (none in practice).
            const auto first = record(0);
            if (!first || first->offset > offset) return std::nullopt;
            index_ = 0;
        }
        while (static_cast<std::uint64_t>(index_ + 1) < count_) {
            const auto next = record(index_ + 1);
            if (!next || next->offset > offset) break;
            ++index_;
        }
        const auto current = record(index_);
        if (!current) return std::nullopt;
        return current->unix_us;
    }

  private:
    /// The index of the last record whose offset is at most `offset`, -1 when none.
    std::int64_t last_at_or_before(std::uint64_t offset) {
        std::int64_t lo = 0;
        std::int64_t hi = static_cast<std::int64_t>(count_) - 1;
        std::int64_t found = -1;
        while (lo <= hi) {
            const std::int64_t mid = lo + (hi - lo) / 2;
            const auto r = record(mid);
            if (!r) return found;
            if (r->offset <= offset) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found;
    }

    std::optional<TimeRecord> record(std::int64_t i) {
        if (i < block_start_ || i >= block_start_ + static_cast<std::int64_t>(block_.size())) {
            block_.assign(kBlock, TimeRecord{});
            const ssize_t n =
                ::pread(fd_.get(), block_.data(), kBlock * sizeof(TimeRecord),
                        static_cast<off_t>(i * static_cast<std::int64_t>(sizeof(TimeRecord))));
            block_.resize(n > 0 ? static_cast<std::size_t>(n) / sizeof(TimeRecord) : 0);
            block_start_ = i;
            if (block_.empty()) return std::nullopt;
        }
        return block_[static_cast<std::size_t>(i - block_start_)];
    }

    static constexpr std::size_t kBlock = 256;
    sys::Fd fd_;
    std::uint64_t count_ = 0;
    bool positioned_ = false;
    std::int64_t index_ = -1;
    std::vector<TimeRecord> block_;
    std::int64_t block_start_ = 0;
};

std::optional<LogStream> stream_named(std::string_view name) {
    if (name == "out") return LogStream::Out;
    if (name == "err") return LogStream::Err;
    return std::nullopt;
}

/// Splits `text` at the first `n` spaces: n fields, then the rest (which may hold spaces).
std::optional<std::vector<std::string_view>> fields(std::string_view text, std::size_t n) {
    std::vector<std::string_view> out;
    for (std::size_t i = 0; i < n; ++i) {
        const auto sp = text.find(' ');
        if (sp == std::string_view::npos) return std::nullopt;
        out.push_back(text.substr(0, sp));
        text.remove_prefix(sp + 1);
    }
    out.push_back(text);
    return out;
}

}  // namespace

std::optional<LogsQuery> parse_logs_query(std::string_view query, std::string* error) {
    auto fail = [error](std::string why) -> std::optional<LogsQuery> {
        if (error) *error = std::move(why);
        return std::nullopt;
    };
    if (query.size() > kMaxLogQuery) {
        return fail("the query is longer than " + std::to_string(kMaxLogQuery) + " bytes");
    }
    LogsQuery q;
    bool has_rank = false;
    bool has_tail = false;
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
        const auto eq = pair.find('=');
        if (eq == std::string_view::npos) return fail("expected NAME=VALUE pairs");
        const std::string_view name = pair.substr(0, eq);
        const std::string_view text = pair.substr(eq + 1);
        if (name == "rank") {
            const auto v = decimal(text, 10);
            if (has_rank || !v || *v > 0x7fffffff) return fail("rank: expected one rank number");
            q.rank = static_cast<int>(*v);
            has_rank = true;
        } else if (name == "tail") {
            const auto v = decimal(text, 6);
            if (has_tail || !v || *v == 0 || *v > kMaxLogTail) {
                return fail("tail: expected one number of lines from 1 to " +
                            std::to_string(kMaxLogTail));
            }
            q.tail = static_cast<std::size_t>(*v);
            has_tail = true;
        } else if (name == "files") {
            const auto v = decimal(text, 9);
            if (q.files || !v) return fail("files: expected one number");
            q.files = *v;
        } else if (name == "out" || name == "err") {
            auto& after = name == "out" ? q.out_after : q.err_after;
            const auto v = decimal(text, 19);
            if (after || !v) return fail(std::string(name) + ": expected one byte offset");
            after = *v;
        } else {
            return fail("unknown parameter (expected rank, tail, out, err, files)");
        }
    }
    if (!has_rank) return fail("rank: missing (rank=R)");
    return q;
}

std::string logs_query_text(const LogsQuery& q) {
    std::string out = "rank=" + std::to_string(q.rank) + "&tail=" + std::to_string(q.tail);
    if (q.out_after) out += "&out=" + std::to_string(*q.out_after);
    if (q.err_after) out += "&err=" + std::to_string(*q.err_after);
    if (q.files) out += "&files=" + std::to_string(*q.files);
    return out;
}

const char* stream_name(LogStream stream) { return stream == LogStream::Out ? "out" : "err"; }

std::string log_times_path(const std::string& log_path) {
    const std::string_view suffix = ".log";
    if (log_path.size() >= suffix.size() &&
        std::string_view(log_path).substr(log_path.size() - suffix.size()) == suffix) {
        return log_path.substr(0, log_path.size() - suffix.size()) + ".times";
    }
    return log_path + ".times";
}

int append_log_time(int times_fd, std::uint64_t offset, std::int64_t unix_us) {
    const TimeRecord r{offset, unix_us};
    while (true) {
        const ssize_t n = ::write(times_fd, &r, sizeof r);
        if (n == static_cast<ssize_t>(sizeof r)) return 0;
        if (n < 0 && errno == EINTR) continue;
        return n < 0 ? errno : ENOSPC;  // a short write of 16 bytes: the disk is full
    }
}

LogChunk read_log_chunk(const std::string& log_path, int rank, LogStream stream,
                        std::optional<std::uint64_t> after, std::size_t tail, bool ended) {
    LogChunk chunk;
    chunk.rank = rank;
    chunk.stream = stream;
    chunk.kept = true;
    chunk.next_offset = after.value_or(0);
    sys::Fd fd(::open(log_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        chunk.at_end = true;  // not written yet: nothing to read
        return chunk;
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    std::uint64_t start = 0;
    if (after) {
        start = std::min(*after, size);
    } else if (size > kMaxLogReadBytes) {
        start = size - kMaxLogReadBytes;
    }
    const std::uint64_t end = std::min<std::uint64_t>(size, start + kMaxLogReadBytes);
    std::string buffer(static_cast<std::size_t>(end - start), '\0');
    std::size_t got = 0;
    while (got < buffer.size()) {
        const ssize_t n = ::pread(fd.get(), buffer.data() + got, buffer.size() - got,
                                  static_cast<off_t>(start + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    buffer.resize(got);
    std::size_t pos = 0;
    if (!after && start > 0) {  // the window starts inside a line: skip to the next one
        const auto nl = buffer.find('\n');
        pos = nl == std::string::npos ? buffer.size() : nl + 1;
    }
    std::vector<std::pair<std::uint64_t, std::string>> lines;  // offset, text
    while (pos < buffer.size()) {
        const auto nl = buffer.find('\n', pos);
        std::size_t line_end = nl;
        std::size_t next = nl + 1;
        if (nl == std::string::npos) {
            // A partial line waits for its end, unless it fills the whole window (then it is
            // passed on cut, or nothing could ever be read past it).
            if (!(ended && end == size) && (pos != 0 || buffer.size() < kMaxLogReadBytes)) {
                break;
            }
            line_end = buffer.size();
            next = buffer.size();
        }
        std::string text = buffer.substr(pos, std::min(line_end - pos, kMaxLogLineBytes));
        lines.emplace_back(start + pos, std::move(text));
        pos = next;
    }
    chunk.next_offset = start + pos;
    chunk.at_end = chunk.next_offset >= size;
    if (!after && lines.size() > tail) {
        lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(tail));
    }
    TimesCursor times(log_times_path(log_path));
    for (auto& [offset, text] : lines) {
        chunk.lines.push_back(LogLine{rank, stream, times.at(offset), std::move(text)});
    }
    return chunk;
}

std::string logs_answer_text(const std::vector<LogChunk>& chunks) {
    std::string out = "ptrun-logs 1\n";
    if (!chunks.empty()) {
        out += "A " + std::to_string(chunks.front().rank) + " " +
               std::to_string(chunks.front().files) + "\n";
    }
    for (const auto& c : chunks) {
        out += "F " + std::to_string(c.rank) + " " + stream_name(c.stream) + " " +
               std::to_string(c.next_offset) + (c.kept ? " 1\n" : " 0\n");
    }
    for (const auto& c : chunks) {
        for (const auto& line : c.lines) {
            out += "L " + std::to_string(line.rank) + " " + stream_name(line.stream) + " " +
                   (line.unix_us ? std::to_string(*line.unix_us) : std::string("-")) + " ";
            out += line.text;
            out += '\n';
        }
    }
    return out;
}

std::optional<std::vector<LogChunk>> parse_logs_answer(std::string_view text, int rank) {
    const std::string_view magic = "ptrun-logs 1\n";
    if (text.substr(0, magic.size()) != magic) return std::nullopt;
    text.remove_prefix(magic.size());
    std::vector<LogChunk> chunks;
    auto chunk_of = [&chunks](LogStream s) -> LogChunk* {
        for (auto& c : chunks)
            if (c.stream == s) return &c;
        return nullptr;
    };
    std::optional<std::uint64_t> files;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        if (nl == std::string_view::npos) return std::nullopt;  // cut short
        const std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl + 1);
        if (line.substr(0, 2) == "A ") {
            const auto f = fields(line.substr(2), 1);
            if (!f || files || !chunks.empty()) return std::nullopt;
            const auto r = decimal((*f)[0], 10);
            files = decimal((*f)[1], 9);
            if (!r || *r != static_cast<std::uint64_t>(rank) || !files) return std::nullopt;
        } else if (line.substr(0, 2) == "F ") {
            const auto f = fields(line.substr(2), 3);
            if (!f) return std::nullopt;
            const auto r = decimal((*f)[0], 10);
            const auto s = stream_named((*f)[1]);
            const auto next = decimal((*f)[2], 19);
            if (!r || static_cast<int>(*r) != rank || *r > 0x7fffffff || !s || !next ||
                ((*f)[3] != "0" && (*f)[3] != "1") || chunk_of(*s) != nullptr) {
                return std::nullopt;
            }
            chunks.push_back(LogChunk{rank, *s, (*f)[3] == "1", *next, {}, 0, false});
        } else if (line.substr(0, 2) == "L ") {
            const auto f = fields(line.substr(2), 3);
            if (!f) return std::nullopt;
            const auto r = decimal((*f)[0], 10);
            const auto s = stream_named((*f)[1]);
            if (!r || static_cast<int>(*r) != rank || *r > 0x7fffffff || !s) return std::nullopt;
            LogChunk* c = chunk_of(*s);
            if (c == nullptr) return std::nullopt;
            std::optional<std::int64_t> ms;
            if ((*f)[2] != "-") {
                const auto v = decimal((*f)[2], 18);
                if (!v) return std::nullopt;
                ms = static_cast<std::int64_t>(*v);
            }
            c->lines.push_back(LogLine{rank, *s, ms, std::string((*f)[3])});
        } else {
            return std::nullopt;
        }
    }
    for (auto& c : chunks) c.files = files.value_or(0);
    return chunks;
}

std::vector<SourcedLine> merge_by_time(std::vector<std::vector<SourcedLine>> sources) {
    struct Keyed {
        std::int64_t key;
        SourcedLine* line;
    };
    std::vector<Keyed> all;
    for (auto& source : sources) {
        std::int64_t running = std::numeric_limits<std::int64_t>::min();
        for (auto& l : source) {
            if (l.line.unix_us) running = std::max(running, *l.line.unix_us);
            all.push_back(Keyed{running, &l});
        }
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
    std::vector<SourcedLine> out;
    out.reserve(all.size());
    for (auto& k : all) out.push_back(std::move(*k.line));
    return out;
}

}  // namespace ptrun::watchdog
