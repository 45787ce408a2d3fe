#include "ptrun/slurm/hostlist.hpp"

#include <utility>
#include <charconv>
#include <cstdint>

namespace ptrun::slurm {
namespace {

/// Decimal digits beyond this are refused (expansion) or kept as text (compression): 18 digits
/// always fit an std::uint64_t with room for `hi + 1`.
constexpr std::size_t kMaxDigits = 18;

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        if (!is_digit(c)) return false;
    }
    return true;
}

std::uint64_t to_number(std::string_view digits) {
    std::uint64_t value = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return value;
}

/// `value` in decimal, zero-padded on the left to `width` characters.
std::string padded(std::uint64_t value, std::size_t width) {
    std::string text = std::to_string(value);
    if (text.size() < width) text.insert(0, width - text.size(), '0');
    return text;
}

/// lo..hi, each printed zero-padded to `width`.
struct Range {
    std::uint64_t lo;
    std::uint64_t hi;
    std::size_t width;
};

/// One bracket group and the text just before it: "rack[1-2]" of "rack[1-2]-node[01-02]".
struct Group {
    std::string_view text;
    std::vector<Range> ranges;
};

/// One element of the list, parsed but not expanded; `literal` when it has no brackets.
struct HostSpec {
    std::string_view literal;
    std::vector<Group> groups;
};

class Expander {
  public:
    Expander(std::string_view expr, std::size_t max_hosts) : expr_(expr), max_(max_hosts) {}

    std::vector<std::string> run() {
        std::vector<HostSpec> specs;
        std::size_t total = 0;
        std::size_t i = skip_space(0);
        if (i == expr_.size()) return {};
        while (true) {
            if (i == expr_.size() || expr_[i] == ',') throw fail("empty host name", i);
            std::size_t start = i;
            HostSpec spec = parse_host(i);
            std::size_t count = count_of(spec, start);
            if (count > max_ - total) throw too_many(start);
            total += count;
            specs.push_back(std::move(spec));
            i = skip_space(i);
            if (i == expr_.size()) break;
            if (expr_[i] == ',') i = skip_space(i + 1);
        }
        std::vector<std::string> hosts;
        hosts.reserve(total);
        for (const auto& spec : specs) expand(spec, hosts);
        return hosts;
    }

  private:
    ParseError fail(std::string_view reason, std::size_t pos) const {
        return ParseError("hostlist '" + std::string(expr_) + "'", reason, pos);
    }

    ParseError too_many(std::size_t pos) const {
        return fail("expands to more than " + std::to_string(max_) + " hosts", pos);
    }

    std::size_t skip_space(std::size_t i) const {
        while (i < expr_.size() && is_space(expr_[i])) ++i;
        return i;
    }

    /// Parses one element from `i`; leaves `i` on the separator (or the end) that follows it.
    HostSpec parse_host(std::size_t& i) const {
        HostSpec spec;
        std::size_t text_start = i;
        while (i < expr_.size() && expr_[i] != ',' && !is_space(expr_[i])) {
            if (expr_[i] == ']') throw fail("unmatched ']'", i);
            if (expr_[i] != '[') {
                ++i;
                continue;
            }
            std::size_t open = i;
            std::size_t close = expr_.find_first_of("[]", open + 1);
            if (close == std::string_view::npos) throw fail("unclosed '['", open);
            if (expr_[close] == '[') throw fail("'[' inside brackets", close);
            Group group{expr_.substr(text_start, open - text_start), {}};
            parse_ranges(open + 1, close, group.ranges);
            spec.groups.push_back(std::move(group));
            i = close + 1;
            text_start = i;
        }
        std::string_view tail = expr_.substr(text_start, i - text_start);
        if (spec.groups.empty()) {
            spec.literal = tail;
        } else if (!tail.empty()) {
            throw fail("text '" + std::string(tail) + "' after the last ']'", text_start);
        }
        return spec;
    }

    /// Parses the comma-separated ranges in expr_[begin, end).
    void parse_ranges(std::size_t begin, std::size_t end, std::vector<Range>& out) const {
        std::size_t pos = begin;
        while (true) {
            std::size_t comma = expr_.find(',', pos);
            if (comma == std::string_view::npos || comma > end) comma = end;
            out.push_back(parse_range(pos, comma));
            if (comma == end) return;
            pos = comma + 1;
        }
    }

    Range parse_range(std::size_t begin, std::size_t end) const {
        std::string_view text = expr_.substr(begin, end - begin);
        if (text.empty()) throw fail("empty range", begin);
        auto invalid = [&](std::string_view why) {
            return fail("invalid range '" + std::string(text) + "' (" + std::string(why) + ")",
                        begin);
        };
        std::size_t dash = text.find('-');
        std::string_view lo = text.substr(0, dash);
        std::string_view hi = dash == std::string_view::npos ? lo : text.substr(dash + 1);
        if (lo.empty() || (!hi.empty() && hi.front() == '-')) throw invalid("negative number");
        if (!all_digits(lo) || !all_digits(hi)) throw invalid("not a number");
        if (lo.size() > kMaxDigits || hi.size() > kMaxDigits) throw invalid("number too long");
        Range range{to_number(lo), to_number(hi), lo.size()};
        if (range.lo > range.hi) throw invalid("start above end");
        return range;
    }

    /// How many names `spec` yields; throws as soon as the count passes the cap.
    std::size_t count_of(const HostSpec& spec, std::size_t pos) const {
        std::size_t product = 1;
        for (const auto& group : spec.groups) {
            std::size_t in_group = 0;
            for (const auto& r : group.ranges) {
                std::uint64_t span = r.hi - r.lo;  // one less than the count: cannot overflow
                if (span >= max_ - in_group) throw too_many(pos);
                in_group += static_cast<std::size_t>(span) + 1;
            }
            if (in_group != 0 && product > max_ / in_group) throw too_many(pos);
            product *= in_group;
        }
        return product;
    }

    static void expand(const HostSpec& spec, std::vector<std::string>& out) {
        if (spec.groups.empty()) {
            out.emplace_back(spec.literal);
            return;
        }
        std::vector<std::string> partial{std::string()};
        for (const auto& group : spec.groups) {
            std::vector<std::string> next;
            for (const auto& head : partial) {
                for (const auto& r : group.ranges) {
                    for (std::uint64_t v = r.lo;; ++v) {
                        std::string name = head;
                        name.append(group.text).append(padded(v, r.width));
                        next.push_back(std::move(name));
                        if (v == r.hi) break;
                    }
                }
            }
            partial = std::move(next);
        }
        for (auto& name : partial) out.push_back(std::move(name));
    }

    std::string_view expr_;
    std::size_t max_;
};

/// A host name split at its trailing number: "node007" -> {"node", "007"}; digits empty if none.
struct Split {
    std::string_view prefix;
    std::string_view digits;
};

Split split_number(std::string_view name) {
    std::size_t cut = name.size();
    while (cut > 0 && is_digit(name[cut - 1])) --cut;
    std::string_view digits = name.substr(cut);
    if (digits.empty() || digits.size() > kMaxDigits) return {name, {}};
    return {name.substr(0, cut), digits};
}

void check_host_name(const std::string& name) {
    if (name.empty()) throw ParseError("host name ''", "empty host name");
    std::size_t bad = name.find_first_of("[], \t\n\r\f\v");
    if (bad != std::string::npos) {
        throw ParseError("host name '" + name + "'",
                         "holds '" + std::string(1, name[bad]) + "', which a hostlist cannot write",
                         bad);
    }
}

/// Neighbouring names with one prefix and trailing numbers: "node" with 1-3 and 5.
struct Run {
    std::string_view prefix;
    std::vector<Range> ranges;  // empty for a name without a trailing number
    std::string_view literal;

    std::size_t size() const {
        std::size_t n = 0;
        for (const auto& r : ranges) n += static_cast<std::size_t>(r.hi - r.lo) + 1;
        return n;
    }

    std::string render() const {
        if (ranges.empty()) return std::string(literal);
        std::string text(prefix);
        if (size() == 1) return text.append(padded(ranges[0].lo, ranges[0].width));
        text.push_back('[');
        for (std::size_t k = 0; k < ranges.size(); ++k) {
            const Range& r = ranges[k];
            if (k != 0) text.push_back(',');
            text.append(padded(r.lo, r.width));
            if (r.hi != r.lo) text.append("-").append(padded(r.hi, r.width));
        }
        text.push_back(']');
        return text;
    }
};

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view expr, std::size_t max_hosts) {
    return Expander(expr, max_hosts).run();
}

std::string compress_hostlist(const std::vector<std::string>& hosts) {
    std::vector<Run> runs;
    for (const auto& name : hosts) {
        check_host_name(name);
        Split split = split_number(name);
        if (split.digits.empty()) {
            runs.push_back(Run{{}, {}, name});
            continue;
        }
        std::uint64_t value = to_number(split.digits);
        Run* last = runs.empty() ? nullptr : &runs.back();
        if (last && !last->ranges.empty() && last->prefix == split.prefix) {
            Range& r = last->ranges.back();
            // Extend lo..hi only when the range's width writes this number exactly as given:
            // "n9,n10" -> n[9-10], but "n9,n010" -> n[9,010] and "n08,n9" -> n[08,9].
            if (value == r.hi + 1 && padded(value, r.width) == split.digits) {
                r.hi = value;
            } else {
                last->ranges.push_back(Range{value, value, split.digits.size()});
            }
            continue;
        }
        runs.push_back(Run{split.prefix, {Range{value, value, split.digits.size()}}, {}});
    }
    std::string text;
    for (std::size_t k = 0; k < runs.size(); ++k) {
        if (k != 0) text.push_back(',');
        text.append(runs[k].render());
    }
    return text;
}

}  // namespace ptrun::slurm
