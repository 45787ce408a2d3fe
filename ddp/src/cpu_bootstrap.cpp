#include "cpu_bootstrap.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <sstream>

#include "cpu_process_group.hpp"
#include "ptrun/ddp/errors.hpp"
#include "ptrun/rendezvous/errors.hpp"
#include "shm_layout.hpp"

namespace ptrun::ddp::detail {
namespace {

/// Bytes per slot: two halves, each one chunk of the pipeline.
constexpr std::size_t kSlotBytes = 2 * 512 * 1024;

struct Member {
    int rank;
    int group_rank;
    int pid;
};

std::string key(const char* what, int index) {
    return std::string(what) + "/" + std::to_string(index);
}

std::string unique_segment_name() {
    static std::atomic<unsigned> counter{0};
    std::random_device rd;
    return "/ptrun-ddp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
           std::to_string(rd());
}

/// The header's copy_mode for a fixed strategy (or 0: tuned).
std::uint32_t copy_mode_of(std::optional<CopyStrategy> shm_copy) {
    return shm_copy ? 1 + static_cast<std::uint32_t>(*shm_copy) : 0;
}

std::string shm_copy_name(std::uint32_t copy_mode) {
    return copy_mode == 0
               ? "auto"
               : std::string(copy_strategy_name(static_cast<CopyStrategy>(copy_mode - 1)));
}

SharedSegment create_segment(int local_size, std::optional<CopyStrategy> shm_copy) {
    const std::size_t bytes = segment_bytes(local_size, kSlotBytes);
    SharedSegment seg = SharedSegment::create(unique_segment_name(), bytes);
    auto* header = static_cast<ShmHeader*>(seg.data());
    header->magic = kShmMagic;
    header->local_size = static_cast<std::uint32_t>(local_size);
    header->copy_mode = copy_mode_of(shm_copy);
    header->slot_bytes = kSlotBytes;
    return seg;
}

SharedSegment open_segment(const std::string& published, int local_size,
                           std::optional<CopyStrategy> shm_copy) {
    std::istringstream in(published);
    std::string name;
    std::size_t bytes = 0;
    in >> name >> bytes;
    SharedSegment seg = SharedSegment::open(name, bytes);
    const auto* header = static_cast<const ShmHeader*>(seg.data());
    if (header->magic != kShmMagic ||
        header->local_size != static_cast<std::uint32_t>(local_size)) {
        throw CollectiveError("shared memory '" + name + "' has a foreign or mismatched header");
    }
    if (header->copy_mode != copy_mode_of(shm_copy)) {
        throw CollectiveError(
            "init_process_group: shm_copy '" + shm_copy_name(copy_mode_of(shm_copy)) +
            "' differs from the node leader's '" + shm_copy_name(header->copy_mode) +
            "': every rank must pass the same InitOptions::shm_copy");
    }
    return seg;
}

}  // namespace

std::unique_ptr<ProcessGroup> bootstrap_cpu_group(const RunContext& ctx, rdzv::Store& store,
                                                  std::chrono::milliseconds timeout,
                                                  std::optional<CopyStrategy> shm_copy,
                                                  FailureBoard board, HeartbeatPtr heartbeat) {
    const CallTimer timer = CallTimer::start("init_process_group", timeout);
    const int pid = static_cast<int>(::getpid());
    store.set(key("rank", ctx.rank), std::to_string(ctx.group_rank) + " " + std::to_string(pid));
    std::vector<std::string> keys;
    for (int r = 0; r < ctx.world_size; ++r) keys.push_back(key("rank", r));
    std::vector<std::string> values;
    try {
        values = store.multi_get(keys, timeout);
    } catch (const rdzv::StoreTimeout& e) {
        throw CollectiveTimeout(std::string("init_process_group: not every rank joined: ") +
                                e.what());
    }

    std::vector<Member> members;
    for (int r = 0; r < ctx.world_size; ++r) {
        Member m{r, 0, 0};
        std::istringstream(values[static_cast<std::size_t>(r)]) >> m.group_rank >> m.pid;
        members.push_back(m);
    }
    std::vector<int> node_ids;
    for (const Member& m : members) node_ids.push_back(m.group_rank);
    std::sort(node_ids.begin(), node_ids.end());
    node_ids.erase(std::unique(node_ids.begin(), node_ids.end()), node_ids.end());
    const int nodes = static_cast<int>(node_ids.size());
    const int node = static_cast<int>(
        std::lower_bound(node_ids.begin(), node_ids.end(), ctx.group_rank) - node_ids.begin());
    std::vector<int> local_ranks, local_pids, leader_ranks(node_ids.size(), -1);
    for (const Member& m : members) {  // members are in rank order
        const auto idx = static_cast<std::size_t>(
            std::lower_bound(node_ids.begin(), node_ids.end(), m.group_rank) - node_ids.begin());
        if (leader_ranks[idx] < 0) leader_ranks[idx] = m.rank;
        if (m.group_rank == ctx.group_rank) {
            local_ranks.push_back(m.rank);
            local_pids.push_back(m.pid);
        }
    }
    const int local_size = static_cast<int>(local_ranks.size());
    const int local_index = static_cast<int>(
        std::find(local_ranks.begin(), local_ranks.end(), ctx.rank) - local_ranks.begin());
    const bool leader = local_index == 0;

    CpuGroupParts parts;
    parts.rank = ctx.rank;
    parts.size = ctx.world_size;
    parts.nodes = nodes;
    parts.heartbeat = std::move(heartbeat);
    SharedSegment segment;
    if (local_size > 1) {
        if (leader) {
            segment = create_segment(local_size, shm_copy);
            store.set(key("shm", node), segment.name() + " " + std::to_string(segment.size()));
        } else {
            segment = open_segment(store.get(key("shm", node), timeout), local_size, shm_copy);
        }
    }
    if (nodes > 1 && leader) {
        Listener listener = listen_any();
        const std::string host = local_address_towards(ctx.master_addr, ctx.master_port);
        store.set(key("addr", node), host + " " + std::to_string(listener.port));
        const int next = (node + 1) % nodes;
        std::istringstream next_addr(store.get(key("addr", next), timeout));
        std::string next_host;
        int next_port = 0;
        next_addr >> next_host >> next_port;
        Fd to_next = connect_link(next_host, static_cast<std::uint16_t>(next_port), node, timer);
        Fd from_prev = accept_link(listener, (node + nodes - 1) % nodes, timer);
        parts.ring = std::make_unique<TcpRing>(node, leader_ranks, std::move(from_prev),
                                               std::move(to_next), std::move(board));
    }
    // Everyone mapped the segment and linked the ring: the name can go.
    if (store.add("joined", 1) == ctx.world_size) store.set("ready", "1");
    try {
        store.wait({"ready"}, timeout);
    } catch (const rdzv::StoreTimeout& e) {
        throw CollectiveTimeout(std::string("init_process_group: not every rank finished setup: ") +
                                e.what());
    }
    segment.unlink();
    if (local_size > 1) {
        std::vector<int> pids = local_pids;
        parts.shm = std::make_unique<ShmCollectives>(std::move(segment), local_index, local_ranks,
                                                     std::move(pids));
    }
    return std::make_unique<CpuProcessGroup>(std::move(parts), timeout);
}

}  // namespace ptrun::ddp::detail
