#include "ptrun/slurm/tasks_per_node.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>

namespace ptrun::slurm {
namespace {

class CountParser {
  public:
    CountParser(std::string_view text, std::size_t max_nodes) : text_(text), max_(max_nodes) {}

    std::vector<int> run() {
        if (text_.empty()) throw fail("empty list", 0);
        std::vector<int> counts;
        std::int64_t total = 0;
        std::size_t i = 0;
        while (true) {
            std::size_t start = i;
            std::uint64_t count = number(i, "count");
            if (count < 1 || count > static_cast<std::uint64_t>(kMaxTasksPerNode)) {
                throw fail("count " + std::to_string(count) + " is not from 1 to " +
                               std::to_string(kMaxTasksPerNode),
                           start);
            }
            std::uint64_t repeat = 1;
            if (i < text_.size() && text_[i] == '(') {
                std::size_t open = i;
                if (text_.substr(i, 2) != "(x") throw fail("expected '(x' before a repeat", open);
                i += 2;
                std::size_t at = i;
                repeat = number(i, "repeat");
                if (repeat < 1) throw fail("repeat (x0) names no node", at);
                if (i == text_.size() || text_[i] != ')') throw fail("expected ')'", i);
                ++i;
            }
            if (repeat > max_ - counts.size()) {
                throw fail("more than " + std::to_string(max_) + " nodes", start);
            }
            total += static_cast<std::int64_t>(count * repeat);
            if (total > std::numeric_limits<int>::max()) {
                throw fail("more than " + std::to_string(std::numeric_limits<int>::max()) +
                               " tasks in all",
                           start);
            }
            counts.insert(counts.end(), static_cast<std::size_t>(repeat), static_cast<int>(count));
            if (i == text_.size()) return counts;
            if (text_[i] != ',') throw fail("unexpected '" + std::string(1, text_[i]) + "'", i);
            ++i;
            if (i == text_.size() || text_[i] == ',') throw fail("empty element", i);
        }
    }

  private:
    ParseError fail(std::string_view reason, std::size_t pos) const {
        return ParseError("tasks per node '" + std::string(text_) + "'", reason, pos);
    }

    /// Reads the unsigned decimal at `i` (at most 9 digits) and moves `i` past it.
    std::uint64_t number(std::size_t& i, std::string_view what) const {
        std::size_t end = i;
        while (end < text_.size() && text_[end] >= '0' && text_[end] <= '9') ++end;
        if (end == i) {
            if (i == text_.size()) throw fail("expected a " + std::string(what), i);
            throw fail(
                "expected a " + std::string(what) + ", found '" + std::string(1, text_[i]) + "'",
                i);
        }
        if (end - i > 9) throw fail(std::string(what) + " is too large", i);
        std::uint64_t value = 0;
        std::from_chars(text_.data() + i, text_.data() + end, value);
        i = end;
        return value;
    }

    std::string_view text_;
    std::size_t max_;
};

}  // namespace

std::vector<int> parse_tasks_per_node(std::string_view text, std::size_t max_nodes) {
    return CountParser(text, max_nodes).run();
}

}  // namespace ptrun::slurm
