#include "request_parser.hpp"

#include <array>

namespace ptrun::rdzv::detail {
namespace {

/// Reads fields off the front of a buffer with a sticky state, like an istream's failbit: once
/// bytes run out or a limit is broken, every later read is a no-op returning a default.
class Cursor {
  public:
    enum class State { Ok, NeedMore, Invalid };

    Cursor(std::string_view bytes, const TcpStoreLimits& limits) : bytes_(bytes), limits_(limits) {}

    bool ok() const noexcept { return state_ == State::Ok; }
    /// Continues at `pos` (a position an earlier walk of the same bytes reached).
    void seek(std::size_t pos) noexcept { pos_ = pos; }
    State state() const noexcept { return state_; }
    std::size_t pos() const noexcept { return pos_; }
    std::size_t need() const noexcept { return need_; }
    const std::string& error() const noexcept { return error_; }

    void fail(std::string message) {
        if (!ok()) return;
        state_ = State::Invalid;
        error_ = std::move(message);
    }

    std::uint8_t u8() {
        const char* p = take(1);
        return p ? static_cast<std::uint8_t>(*p) : 0;
    }
    template <typename T>
    T raw() {
        const char* p = take(sizeof(T));
        return p ? load_raw<T>(p) : T{};
    }
    /// A u64-length-prefixed field of at most `max` bytes (checked before waiting for it).
    std::string_view field(std::size_t max, const char* what) {
        const auto len = raw<std::uint64_t>();
        if (!ok()) return {};
        if (len > max) {
            fail(std::string(what) + " of " + std::to_string(len) + " bytes exceeds the limit of " +
                 std::to_string(max));
            return {};
        }
        const char* p = take(static_cast<std::size_t>(len));
        return p ? std::string_view(p, static_cast<std::size_t>(len)) : std::string_view{};
    }
    std::string_view key() { return field(limits_.max_key_bytes, "key"); }
    std::string_view value() { return field(limits_.max_value_bytes, "value"); }
    /// A u64 element count, at most max_keys_per_request.
    std::size_t count() {
        const auto n = raw<std::uint64_t>();
        if (ok() && n > limits_.max_keys_per_request) {
            fail("count of " + std::to_string(n) + " keys exceeds the limit of " +
                 std::to_string(limits_.max_keys_per_request));
        }
        return ok() ? static_cast<std::size_t>(n) : 0;
    }

  private:
    const char* take(std::size_t n) {
        if (!ok()) return nullptr;
        // n is at most max(limits) here, so pos_ + n cannot overflow.
        const std::size_t end = pos_ + n;
        if (end > limits_.max_request_bytes) {
            fail("request of at least " + std::to_string(end) + " bytes exceeds the limit of " +
                 std::to_string(limits_.max_request_bytes));
            return nullptr;
        }
        if (end > bytes_.size()) {
            state_ = State::NeedMore;
            need_ = end;
            return nullptr;
        }
        const char* p = bytes_.data() + pos_;
        pos_ = end;
        return p;
    }

    std::string_view bytes_;
    const TcpStoreLimits& limits_;
    State state_ = State::Ok;
    std::size_t pos_ = 0;
    std::size_t need_ = 0;
    std::string error_;
};

/// Walks one request. With `out == nullptr` it only validates and measures (no allocation
/// proportional to the input), resuming the items of a counted request at `progress` and
/// recording there how far they are complete; with `out` it also copies the fields.
void walk(Cursor& c, Dialect dialect, Request* out, ScanProgress* progress = nullptr) {
    const std::uint8_t code = c.u8();
    if (!c.ok()) return;
    const auto op = decode_op(dialect, code);
    if (!op) {
        c.fail("unknown query type " + std::to_string(code));
        return;
    }
    auto add_key = [&](std::string_view k) {
        if (out && c.ok()) out->keys.emplace_back(k);
    };
    auto add_value = [&](std::string_view v) {
        if (out && c.ok()) out->values.emplace_back(v);
    };
    if (out) out->op = *op;
    switch (*op) {
        case Op::Validate:
        case Op::Ping: {
            const auto w = c.raw<std::uint32_t>();
            if (out) out->word = w;
            break;
        }
        case Op::Set:
        case Op::Append:
        case Op::QueuePush:
            add_key(c.key());
            add_value(c.value());
            break;
        case Op::CompareSet:
            add_key(c.key());
            add_value(c.value());
            add_value(c.value());
            break;
        case Op::Get:
        case Op::WatchKey:
        case Op::DeleteKey:
        case Op::QueuePop:
        case Op::QueueLen:
            add_key(c.key());
            break;
        case Op::Add:
        case Op::Barrier: {
            add_key(c.key());
            const auto n = c.raw<std::int64_t>();
            if (out) out->number = n;
            break;
        }
        case Op::Check:
        case Op::Wait:
        case Op::MultiGet:
        case Op::MultiSet: {
            const std::size_t n = c.count();
            const bool pairs = *op == Op::MultiSet;
            if (out) {  // the whole request is present: n <= size / 8
                out->keys.reserve(n);
                if (pairs) out->values.reserve(n);
            }
            std::size_t i = 0;
            if (progress != nullptr && c.ok() && progress->items > 0) {
                i = progress->items;
                c.seek(progress->end);
            }
            for (; i < n && c.ok(); ++i) {
                add_key(c.key());
                if (pairs) add_value(c.value());
                if (progress != nullptr && c.ok()) *progress = ScanProgress{i + 1, c.pos()};
            }
            break;
        }
        case Op::NumKeys:
        case Op::CancelWait:
        case Op::ListKeys:
            break;
    }
}

constexpr std::array<char, 5> kValidate = {0x00, static_cast<char>(0xCE), static_cast<char>(0xF7),
                                           static_cast<char>(0x85), 0x3C};

}  // namespace

ParseResult parse_request(std::string_view bytes, Dialect dialect, const TcpStoreLimits& limits,
                          ScanProgress* progress) {
    ParseResult result;
    Cursor scan(bytes, limits);
    walk(scan, dialect, nullptr, progress);
    switch (scan.state()) {
        case Cursor::State::NeedMore:
            result.status = ParseResult::Status::NeedMore;
            result.size = scan.need();
            return result;
        case Cursor::State::Invalid:
            result.status = ParseResult::Status::Invalid;
            result.error = scan.error();
            return result;
        case Cursor::State::Ok:
            break;
    }
    Cursor build(bytes, limits);
    walk(build, dialect, &result.request);
    result.status = ParseResult::Status::Complete;
    result.size = build.pos();
    return result;
}

Detection detect_dialect(std::string_view first) noexcept {
    if (first.empty()) return Detection::NeedMore;
    if (first[0] == kValidate[1]) return Detection::Reject;
    if (first[0] != 0) return Detection::Legacy;
    for (std::size_t i = 1; i < kValidate.size(); ++i) {
        if (i >= first.size()) return Detection::NeedMore;
        if (first[i] != kValidate[i]) return Detection::Legacy;  // an L1 SET
    }
    return Detection::Modern;
}

}  // namespace ptrun::rdzv::detail
