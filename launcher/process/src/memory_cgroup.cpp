#include "ptrun/launcher/process/memory_cgroup.hpp"

#include <sys/stat.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

#include "ptrun/launcher/process/cgroup.hpp"
#include "ptrun/launcher/process/oom_record.hpp"

namespace ptrun::launcher {
namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::optional<std::uint64_t> read_number(const std::string& path) {
    const std::string text = read_text(path);
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end == text.data()) return std::nullopt;
    return v;
}

/// "key N" in a flat keyed file (memory.events, memory.oom_control); 0 when absent.
std::uint64_t keyed(const std::string& path, const std::string& key) {
    std::istringstream in(read_text(path));
    std::string k;
    std::uint64_t v = 0;
    while (in >> k >> v) {
        if (k == key) return v;
    }
    return 0;
}

bool is_dir(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// The memory hierarchy's mount point and root (mountinfo's fourth field) and its version: a v1
/// mount with the memory option first (on a hybrid machine the controller is there), else v2.
struct Hierarchy {
    std::string mount;
    std::string root;
    int version = 0;
};

std::optional<Hierarchy> memory_hierarchy() {
    std::istringstream mi(read_text("/proc/self/mountinfo"));
    std::optional<Hierarchy> v2;
    for (std::string line; std::getline(mi, line);) {
        // "36 25 0:30 / /sys/fs/cgroup/memory rw,... - cgroup cgroup rw,memory"
        const auto dash = line.find(" - ");
        if (dash == std::string::npos) continue;
        std::istringstream fields(line.substr(0, dash)), tail(line.substr(dash + 3));
        std::string id, parent, devno, root, mount, type, source, options;
        fields >> id >> parent >> devno >> root >> mount;
        tail >> type >> source >> options;
        if (type == "cgroup") {
            std::istringstream opts(options);
            for (std::string o; std::getline(opts, o, ',');) {
                if (o == "memory") return Hierarchy{mount, root, 1};
            }
        } else if (type == "cgroup2" && !v2) {
            v2 = Hierarchy{mount, root, 2};
        }
    }
    return v2;
}

}  // namespace

std::optional<MemoryCgroup> memory_cgroup_at(const std::string& path) {
    auto h = memory_hierarchy();
    if (!h) return std::nullopt;
    std::string rel = path;
    if (h->root != "/" && rel.rfind(h->root, 0) == 0) rel = rel.substr(h->root.size());
    MemoryCgroup c{path, h->mount + (rel == "/" ? "" : rel), h->version};
    if (!is_dir(c.dir)) return std::nullopt;
    if (c.version == 2 &&
        read_text(c.dir + "/cgroup.controllers").find("memory") == std::string::npos) {
        // v2 without the memory controller here: only the root has memory files then.
        if (c.dir != h->mount) return std::nullopt;
    }
    return c;
}

std::optional<MemoryCgroup> own_memory_cgroup() {
    std::istringstream cg(read_text("/proc/self/cgroup"));
    std::string v1, v2;
    for (std::string line; std::getline(cg, line);) {
        // "4:memory:/slurm/job_1" (v1), "0::/user.slice/..." (v2)
        const auto a = line.find(':');
        const auto b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1);
        std::istringstream list(controllers);
        for (std::string c; std::getline(list, c, ',');) {
            if (c == "memory") v1 = line.substr(b + 1);
        }
        if (line.rfind("0::", 0) == 0) v2 = line.substr(3);
    }
    auto h = memory_hierarchy();
    if (!h) return std::nullopt;
    return memory_cgroup_at(h->version == 1 ? v1 : v2);
}

std::optional<std::uint64_t> memory_limit(const MemoryCgroup& c) {
    if (c.version == 2) return read_number(c.dir + "/memory.max");  // "max": nullopt
    auto v = read_number(c.dir + "/memory.limit_in_bytes");
    if (v && *v >= (1ULL << 62)) return std::nullopt;  // unlimited: LONG_MAX rounded to a page
    return v;
}

std::optional<std::uint64_t> memory_peak(const MemoryCgroup& c) {
    return read_number(c.dir + (c.version == 2 ? "/memory.peak" : "/memory.max_usage_in_bytes"));
}

std::optional<std::uint64_t> memory_current(const MemoryCgroup& c) {
    return read_number(c.dir + (c.version == 2 ? "/memory.current" : "/memory.usage_in_bytes"));
}

std::uint64_t memory_oom_kills(const MemoryCgroup& c) {
    return keyed(c.dir + (c.version == 2 ? "/memory.events" : "/memory.oom_control"), "oom_kill");
}

std::optional<MemoryLimit> cgroup_memory_limit(MemoryCgroup c) {
    std::optional<MemoryLimit> tightest;
    for (;;) {
        const auto bytes = memory_limit(c);
        if (bytes && (!tightest || *bytes < *tightest->bytes)) {
            tightest = MemoryLimit{bytes, "the job's memory cgroup " + c.path};
        }
        // Up one level while the directory and the path end alike (never above the mount).
        const auto slash = c.path.rfind('/');
        if (c.path == "/" || slash == std::string::npos) break;
        const std::string last = c.path.substr(slash);
        if (c.dir.size() <= last.size() ||
            c.dir.compare(c.dir.size() - last.size(), last.size(), last) != 0) {
            break;
        }
        c.dir.resize(c.dir.size() - last.size());
        c.path = slash == 0 ? "/" : c.path.substr(0, slash);
    }
    return tightest;
}

MemoryLimit job_memory_limit() {
    auto own = own_memory_cgroup();
    if (!own) {  // v2 without memory for ptrun's cgroup: a cgroup above may still have a limit
        std::istringstream cg(read_text("/proc/self/cgroup"));
        for (std::string line; std::getline(cg, line);) {
            if (line.rfind("0::", 0) == 0) own = MemoryCgroup{line.substr(3), own_cgroup_dir(), 2};
        }
    }
    if (own && !own->dir.empty()) {
        if (auto limit = cgroup_memory_limit(*own)) return *limit;
    }
    return MemoryLimit{node_memory_bytes(), "the node's memory"};
}

}  // namespace ptrun::launcher
