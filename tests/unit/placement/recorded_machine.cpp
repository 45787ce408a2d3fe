#include "recorded_machine.hpp"

#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "ptrun/placement/placement_error.hpp"

namespace ptrun::placement::test {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text << "\n";
}

struct Cpu {
    int package = 0;
    int core = 0;
    std::optional<int> l3;
};

}  // namespace

RecordedMachine::RecordedMachine(const std::string& name) {
    std::ifstream in(std::string(PTRUN_TOPOLOGY_DIR) + "/" + name + ".topo");
    if (!in) throw std::runtime_error("no topology fixture '" + name + "'");
    std::string pattern = (fs::temp_directory_path() / "ptrun-topo-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    sys_ = dir_ / "sys";

    std::map<int, std::pair<IdSet, std::uint64_t>> nodes;
    std::map<int, Cpu> cpus;
    bool caches = true;
    std::string line;
    while (std::getline(in, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream words(line);
        std::string verb;
        if (!(words >> verb)) continue;
        auto bad = [&] { return std::runtime_error(name + ".topo: cannot read '" + line + "'"); };
        if (verb == "node") {
            int id = 0;
            std::string cpus_word, list, mem_word;
            std::uint64_t kb = 0;
            if (!(words >> id >> cpus_word >> list) || cpus_word != "cpus") throw bad();
            if (words >> mem_word >> kb && mem_word != "mem") throw bad();
            nodes[id] = {parse_id_list(list), kb};
        } else if (verb == "cpus") {
            std::string list, package_word, cores_word, core_list, l3_word;
            int package = 0;
            if (!(words >> list >> package_word >> package >> cores_word >> core_list)) throw bad();
            std::optional<int> l3;
            int l3_id = 0;
            if (words >> l3_word >> l3_id) l3 = l3_id;
            auto ids = parse_id_list(list).ids();
            auto cores = parse_id_list(core_list).ids();
            if (ids.size() != cores.size()) throw bad();
            for (std::size_t i = 0; i < ids.size(); ++i) cpus[ids[i]] = Cpu{package, cores[i], l3};
        } else if (verb == "pci") {
            std::string bus, node_word;
            int node = 0;
            if (!(words >> bus >> node_word >> node)) throw bad();
            write(sys_ / "bus/pci/devices" / bus / "numa_node", std::to_string(node));
        } else if (verb == "gpu") {
            int ordinal = 0;
            std::string bus, uuid;
            if (!(words >> ordinal >> bus >> uuid)) throw bad();
            buses_[std::to_string(ordinal)] = bus;
            buses_[uuid] = bus;
            uuids_[ordinal] = uuid;
        } else if (verb == "allowed" || verb == "mems") {
            std::string list;
            if (!(words >> list)) throw bad();
            (verb == "allowed" ? allowed_ : mems_.emplace()) = parse_id_list(list);
        } else if (verb == "no-cache") {
            caches = false;
        } else {
            throw bad();
        }
    }

    std::vector<int> all;
    for (const auto& [id, cpu] : cpus) all.push_back(id);
    IdSet online(all);
    if (allowed_.empty()) allowed_ = online;
    auto cpu_dir = sys_ / "devices/system/cpu";
    for (const char* file : {"online", "possible", "present"})
        write(cpu_dir / file, to_list(online));
    for (const auto& [id, cpu] : cpus) {
        std::vector<int> siblings, l3_sharers;
        for (const auto& [other_id, other] : cpus) {
            if (other.package == cpu.package && other.core == cpu.core)
                siblings.push_back(other_id);
            if (cpu.l3 && other.l3 == cpu.l3) l3_sharers.push_back(other_id);
        }
        auto dir = cpu_dir / ("cpu" + std::to_string(id));
        write(dir / "topology/physical_package_id", std::to_string(cpu.package));
        write(dir / "topology/core_id", std::to_string(cpu.core));
        write(dir / "topology/thread_siblings_list", to_list(IdSet(siblings)));
        if (!caches) continue;
        auto cache = [&](int index, int level, const char* type, int cache_id,
                         const IdSet& shared) {
            auto d = dir / "cache" / ("index" + std::to_string(index));
            write(d / "level", std::to_string(level));
            write(d / "type", type);
            write(d / "id", std::to_string(cache_id));
            write(d / "shared_cpu_list", to_list(shared));
        };
        int core_key = cpu.package * 1000 + cpu.core;
        cache(0, 1, "Data", core_key, IdSet(siblings));
        cache(1, 1, "Instruction", core_key, IdSet(siblings));
        cache(2, 2, "Unified", core_key, IdSet(siblings));
        if (cpu.l3) cache(3, 3, "Unified", *cpu.l3, IdSet(l3_sharers));
    }
    if (!nodes.empty()) {
        auto node_dir = sys_ / "devices/system/node";
        std::vector<int> ids, with_memory;
        for (const auto& [id, node] : nodes) {
            ids.push_back(id);
            if (node.second > 0) with_memory.push_back(id);
            auto dir = node_dir / ("node" + std::to_string(id));
            write(dir / "cpulist", to_list(node.first));
            write(dir / "meminfo", "Node " + std::to_string(id) +
                                       " MemTotal:       " + std::to_string(node.second) +
                                       " kB\nNode " + std::to_string(id) + " MemFree:        0 kB");
        }
        for (const char* file : {"online", "possible"}) write(node_dir / file, to_list(IdSet(ids)));
        write(node_dir / "has_memory", to_list(IdSet(with_memory)));
        write(node_dir / "has_cpu", to_list(IdSet(ids)));
    }
}

RecordedMachine::~RecordedMachine() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

std::vector<env::CudaDevice> RecordedMachine::gpus() const {
    std::vector<env::CudaDevice> out;
    for (const auto& [ordinal, uuid] : uuids_) {
        out.push_back(
            env::CudaDevice{std::to_string(ordinal), static_cast<std::uint32_t>(ordinal)});
    }
    return out;
}

std::string FakeBusIds::bus_id(const env::CudaDevice& device) {
    const auto& buses = machine_.gpu_buses();
    if (auto it = buses.find(device.id); it != buses.end()) return it->second;
    std::string found;
    for (const auto& [key, bus] : buses) {
        if (key.rfind("GPU-", 0) == 0 && key.rfind(device.id, 0) == 0) {
            if (!found.empty())
                throw PlacementError("fake driver: '" + device.id + "' is ambiguous");
            found = bus;
        }
    }
    if (found.empty()) throw PlacementError("fake driver: no GPU '" + device.id + "'");
    return found;
}

}  // namespace ptrun::placement::test
