// Uses the installed ptrun::ddp (a process group from ptrun's environment, an allreduce, a
// DataParallel step) and ptrun::rendezvous (an in-memory store). Prints one line per rank.
#include <cstdio>
#include <vector>

#include "ptrun/ddp/data_parallel.hpp"
#include "ptrun/ddp/init.hpp"
#include "ptrun/rendezvous/in_memory_store.hpp"

int main() {
    auto pg =
        ptrun::ddp::init_process_group_from_environment({.backend = ptrun::ddp::Backend::Cpu});
    const int rank = pg->rank(), size = pg->size();

    std::int64_t sum = rank + 1;
    pg->allreduce(&sum, 1, ptrun::ddp::DType::Int64, ptrun::ddp::ReduceOp::Sum)->wait();

    std::vector<float> param(4, 1.0f), grad(4, static_cast<float>(rank));
    ptrun::ddp::DataParallel dp(*pg);
    dp.add_parameter("w", param.data(), grad.data(), param.size());
    dp.broadcast_parameters();
    dp.mark_grad_ready(0);
    dp.finish();  // grad = mean of the ranks = (size - 1) / 2

    ptrun::rdzv::InMemoryStore store;
    store.set("greeting", "hello");

    std::printf("consumer rank %d/%d: sum %lld grad %.2f store %s\n", rank, size,
                static_cast<long long>(sum), static_cast<double>(grad[0]),
                store.get("greeting", std::chrono::seconds(1)).c_str());
    return sum == static_cast<std::int64_t>(size) * (size + 1) / 2 ? 0 : 1;
}
