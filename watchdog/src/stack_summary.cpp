#include "ptrun/watchdog/stack_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string_view>

namespace ptrun::watchdog {
namespace {

bool contains(std::string_view s, std::string_view part) {
    return s.find(part) != std::string_view::npos;
}

const ThreadStack* main_thread(const std::vector<ThreadStack>& threads) {
    for (const auto& t : threads) {
        if (t.main && !t.frames.empty()) return &t;
    }
    for (const auto& t : threads) {
        if (!t.frames.empty()) return &t;
    }
    return nullptr;
}

/// Python's standard library (…/lib/python3.X/…, but not site- or dist-packages).
bool python_stdlib(const Frame& f) {
    return contains(f.file, "/lib/python") && !contains(f.file, "-packages/");
}

/// The C and C++ runtime: system-call wrappers, locks, sleeps, the standard library.
bool runtime_frame(const Frame& f) {
    static constexpr std::array<std::string_view, 7> kModules = {
        "/libc.so", "/libc-", "/libpthread", "/ld-linux", "/libstdc++", "/libgcc_s", "/libm."};
    for (auto m : kModules) {
        if (contains(f.module, m)) return true;
    }
    const std::string_view fn = f.function;
    return fn.empty() || fn.substr(0, 2) == "__" || fn.substr(0, 5) == "std::" ||
           fn.substr(0, 9) == "__gnu_cxx" || fn == "syscall" || fn == "poll" ||
           fn == "epoll_wait" || fn == "futex_wait" || fn == "nanosleep" || fn == "pause" ||
           fn.substr(0, 8) == "pthread_" || fn.substr(0, 13) == "clock_nanosle";
}

bool names_collective(const Frame& f) {
    static constexpr std::array<std::string_view, 8> kWords = {
        "allreduce", "all_reduce", "AllReduce",  "broadcast",
        "Broadcast", "allgather",  "all_gather", "barrier"};
    for (auto w : kWords) {
        if (contains(f.function, w)) return true;
    }
    return contains(f.function, "reduce_scatter") || contains(f.function, "ReduceScatter");
}

/// "ptrun::ddp::detail::ShmCollectives::allreduce(void*, unsigned long)" -> the last two
/// components without parameters or template arguments: "ShmCollectives::allreduce".
std::string short_name(std::string_view fn) {
    std::string plain;
    int depth = 0;
    for (char c : fn) {  // drop <...> and (...) blocks
        if (c == '<' || c == '(') ++depth;
        if (depth == 0) plain += c;
        if ((c == '>' || c == ')') && depth > 0) --depth;
    }
    if (plain.empty()) return std::string(fn);  // Python's `<module>`, `<lambda>`
    const auto last = plain.rfind("::");
    if (last == std::string::npos || last == 0) return plain;
    const auto before = plain.rfind("::", last - 1);
    return before == std::string::npos ? plain : plain.substr(before + 2);
}

std::string base_name(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

const Frame* place_of(const RankStacks& rank) {
    if (const ThreadStack* py = main_thread(rank.python)) {
        for (const auto& f : py->frames) {
            if (!python_stdlib(f)) return &f;
        }
        return &py->frames.front();
    }
    const ThreadStack* native = main_thread(rank.native);
    if (native == nullptr) return nullptr;
    for (const auto& f : native->frames) {
        if (names_collective(f)) return &f;
    }
    for (const auto& f : native->frames) {
        if (!runtime_frame(f)) return &f;
    }
    return &native->frames.front();
}

std::string describe_place(const Frame* f) {
    if (f == nullptr) return "an unknown place";
    std::string out =
        f->function.empty() ? "an unnamed function" : "`" + short_name(f->function) + "`";
    if (!f->file.empty() && f->line > 0) {
        out += fmt::format(" ({}:{})", base_name(f->file), f->line);
    } else if (f->function.empty() && !f->module.empty()) {
        out += " in " + base_name(f->module);
    }
    return out;
}

namespace {

/// The user's own code: a Python frame outside the standard library, site- and dist-packages,
/// and frozen modules.
bool user_frame(const Frame& f) {
    return !python_stdlib(f) && !contains(f.file, "-packages/") && !f.file.empty() &&
           f.file.front() != '<';
}

/// A frame of a rank that waits for its peers: a collective by name, DDP's gradient reduction
/// (c10d::Reducer all-reduces the buckets inside `backward`, under no collective's name), or
/// torch.distributed's own Python code (its collectives, barriers and store waits). Without
/// native stacks, a Python stack inside torch.autograd's backward counts too: a backward that
/// made no progress for the hang timeout waits in that reduction (the computation does not stall).
bool waits_for_peers(const Frame& f) {
    return names_collective(f) || contains(f.function, "c10d::Reducer") ||
           contains(f.file, "/torch/distributed/") ||
           (contains(f.file, "/torch/autograd/") && contains(f.function, "backward"));
}

/// Whether the rank's main thread waits for its peers (a frame of waits_for_peers, Python or
/// native).
bool in_collective(const RankStacks& rank) {
    for (const auto* threads : {&rank.python, &rank.native}) {
        if (const ThreadStack* t = main_thread(*threads)) {
            if (std::any_of(t->frames.begin(), t->frames.end(), waits_for_peers)) return true;
        }
    }
    return false;
}

}  // namespace

std::string place_text(const RankStacks& rank) {
    if (const ThreadStack* py = main_thread(rank.python)) {
        const auto& frames = py->frames;
        for (std::size_t i = 0; i < frames.size(); ++i) {
            if (!user_frame(frames[i])) continue;
            const std::string where = describe_place(&frames[i]);
            if (i == 0 || frames[i - 1].function.empty()) return where;
            return "`" + short_name(frames[i - 1].function) + "` <- " + where;
        }
    }
    const Frame* f = place_of(rank);
    return f == nullptr ? std::string() : describe_place(f);
}

std::optional<OddOneOut> odd_one_out(const std::vector<RankStacks>& ranks) {
    std::map<std::string, std::vector<const RankStacks*>> groups;
    std::size_t with_stack = 0;
    for (const auto& r : ranks) {
        auto place = place_text(r);
        if (place.empty()) continue;
        groups[place].push_back(&r);
        ++with_stack;
    }
    if (with_stack < 2) return std::nullopt;
    std::size_t largest = 0;
    std::vector<const RankStacks*> alone;
    for (const auto& [place, members] : groups) {
        largest = std::max(largest, members.size());
        if (members.size() == 1) alone.push_back(members.front());
    }
    if (largest >= 2 && alone.size() == 1) {
        bool outside = !in_collective(*alone.front());
        for (const auto& [place, members] : groups) {
            for (const auto* r : members) {
                if (r != alone.front() && !in_collective(*r)) outside = false;
            }
        }
        return OddOneOut{alone.front()->rank,
                         std::string("the only rank whose stack differs from the others'") +
                             (outside ? ", the only one outside a collective" : "")};
    }
    std::vector<const RankStacks*> outside;
    for (const auto& [place, members] : groups) {
        for (const auto* r : members) {
            if (!in_collective(*r)) outside.push_back(r);
        }
    }
    if (outside.size() == 1) {
        return OddOneOut{outside.front()->rank,
                         "the only rank outside a collective while the others wait in one"};
    }
    return std::nullopt;
}

std::string format_ranks(std::vector<int> ranks) {
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    std::string out;
    for (std::size_t i = 0; i < ranks.size();) {
        std::size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        if (!out.empty()) out += ",";
        out += j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
        i = j + 1;
    }
    return out;
}

std::string summarise_stacks(const std::vector<RankStacks>& ranks) {
    std::map<std::string, std::vector<int>> groups;  // place -> ranks
    std::vector<int> unknown;
    for (const auto& r : ranks) {
        auto place = place_text(r);
        if (place.empty()) {
            unknown.push_back(r.rank);
        } else {
            groups[place].push_back(r.rank);
        }
    }
    std::vector<std::pair<std::string, std::vector<int>>> ordered(groups.begin(), groups.end());
    std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
        if (a.second.size() != b.second.size()) return a.second.size() < b.second.size();
        return *std::min_element(a.second.begin(), a.second.end()) <
               *std::min_element(b.second.begin(), b.second.end());
    });
    std::string out;
    auto add = [&out](const std::vector<int>& rs, const std::string& what) {
        if (!out.empty()) out += "; ";
        out += (rs.size() == 1 ? "rank " : "ranks ") + format_ranks(rs) + what;
    };
    for (const auto& [place, rs] : ordered) add(rs, " in " + place);
    if (!unknown.empty()) add(unknown, ": no stack");
    return out;
}

std::vector<std::string> write_stacks(const std::string& dir,
                                      const std::vector<RankStacks>& ranks) {
    std::vector<std::string> paths;
    for (const auto& r : ranks) {
        const std::string path = fmt::format("{}/stacks_rank_{}.txt", dir, r.rank);
        std::ofstream f(path, std::ios::trunc);
        f << fmt::format("rank {} (local rank {}, pid {})\n", r.rank, r.local_rank, r.pid);
        if (!r.note.empty()) f << "note: " << r.note << "\n";
        if (!r.python_text.empty()) f << "\n== Python (faulthandler)\n" << r.python_text << "\n";
        if (!r.native_text.empty()) f << "\n== native\n" << r.native_text << "\n";
        f.close();
        if (!f) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
        paths.push_back(path);
    }
    return paths;
}

}  // namespace ptrun::watchdog
