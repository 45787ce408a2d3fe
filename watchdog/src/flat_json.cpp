#include "flat_json.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace ptrun::watchdog::detail {
namespace {

class Parser {
  public:
    explicit Parser(std::string_view text) : s_(text) {}

    FlatObject object() {
        FlatObject out;
        skip_space();
        expect('{', "'{' opening the object");
        skip_space();
        if (peek() == '}') {
            ++pos_;
        } else {
            for (;;) {
                skip_space();
                if (peek() != '"') fail("a string key");
                std::string key = string();
                skip_space();
                expect(':', "':' after a key");
                skip_space();
                out.insert_or_assign(std::move(key), scalar());
                skip_space();
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect('}', "',' or '}' after a value");
                break;
            }
        }
        skip_space();
        if (pos_ != s_.size()) fail("the end of the input after the object");
        return out;
    }

  private:
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

    [[noreturn]] void fail(const char* expected) const {
        throw JsonError("expected " + std::string(expected) + " at byte " + std::to_string(pos_));
    }

    void expect(char c, const char* what) {
        if (peek() != c) fail(what);
        ++pos_;
    }

    void skip_space() {
        while (pos_ < s_.size() &&
               (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
            ++pos_;
        }
    }

    bool take_word(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    JsonScalar scalar() {
        const char c = peek();
        if (c == '"') return string();
        if (c == '{' || c == '[') fail("a string, number, true, false or null (no nesting)");
        if (take_word("true")) return true;
        if (take_word("false")) return false;
        if (take_word("null")) return JsonNull{};
        if (take_word("NaN")) return JsonNumber{std::numeric_limits<double>::quiet_NaN()};
        if (take_word("Infinity")) return JsonNumber{std::numeric_limits<double>::infinity()};
        if (take_word("-Infinity")) return JsonNumber{-std::numeric_limits<double>::infinity()};
        return number();
    }

    JsonNumber number() {
        const std::size_t start = pos_;
        if (peek() == '-') ++pos_;
        if (peek() == '0') {
            ++pos_;
        } else if (peek() >= '1' && peek() <= '9') {
            while (peek() >= '0' && peek() <= '9') ++pos_;
        } else {
            fail("a value");
        }
        bool integer = true;
        if (peek() == '.') {
            integer = false;
            ++pos_;
            if (!(peek() >= '0' && peek() <= '9')) fail("a digit after '.'");
            while (peek() >= '0' && peek() <= '9') ++pos_;
        }
        if (peek() == 'e' || peek() == 'E') {
            integer = false;
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!(peek() >= '0' && peek() <= '9')) fail("a digit in the exponent");
            while (peek() >= '0' && peek() <= '9') ++pos_;
        }
        const std::string text(s_.substr(start, pos_ - start));
        JsonNumber n;
        n.value = std::strtod(text.c_str(), nullptr);
        if (integer) {
            errno = 0;
            const long long v = std::strtoll(text.c_str(), nullptr, 10);
            if (errno == 0) {
                n.is_integer = true;
                n.integer = v;
            }
        }
        return n;
    }

    unsigned hex4() {
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = peek();
            unsigned d;
            if (c >= '0' && c <= '9') {
                d = static_cast<unsigned>(c - '0');
            } else if (c >= 'a' && c <= 'f') {
                d = static_cast<unsigned>(c - 'a' + 10);
            } else if (c >= 'A' && c <= 'F') {
                d = static_cast<unsigned>(c - 'A' + 10);
            } else {
                fail("four hex digits after \\u");
            }
            v = v * 16 + d;
            ++pos_;
        }
        return v;
    }

    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    unsigned escaped_code_point() {
        unsigned cp = hex4();
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate: a low one must follow
            if (s_.substr(pos_, 2) == "\\u") {
                const std::size_t save = pos_;
                pos_ += 2;
                const unsigned low = hex4();
                if (low >= 0xDC00 && low <= 0xDFFF) {
                    return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                }
                pos_ = save;
            }
            return 0xFFFD;
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) return 0xFFFD;
        return cp;
    }

    std::string string() {
        expect('"', "'\"'");
        std::string out;
        for (;;) {
            if (pos_ >= s_.size()) fail("'\"' closing the string");
            const char c = s_[pos_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) {
                --pos_;
                fail("no control character inside a string");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            const char e = peek();
            ++pos_;
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u':
                    append_utf8(out, escaped_code_point());
                    break;
                default:
                    --pos_;
                    fail("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
            }
        }
    }

    std::string_view s_;
    std::size_t pos_ = 0;
};

}  // namespace

FlatObject parse_flat_object(std::string_view text) { return Parser(text).object(); }

}  // namespace ptrun::watchdog::detail
