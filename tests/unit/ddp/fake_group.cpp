#include "fake_group.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "ptrun/ddp/errors.hpp"

namespace ptrun::ddp::testing {

enum class Kind { Allreduce, Broadcast, Allgather, Barrier };

struct FakeWorld::Op {
    Kind kind = Kind::Barrier;
    std::size_t count = 0;
    DType dtype = DType::Float32;
    ReduceOp op = ReduceOp::Sum;
    int root = 0;
    std::vector<const void*> in;  ///< per rank
    std::vector<void*> out;       ///< per rank
    int arrived = 0;
    bool done = false;
    std::string error;
};

namespace {

template <class T>
void reduce(FakeWorld::Op& op, int size) {
    std::vector<T> acc(op.count);
    std::memcpy(acc.data(), op.in[0], op.count * sizeof(T));
    for (int r = 1; r < size; ++r) {
        const T* x = static_cast<const T*>(op.in[static_cast<std::size_t>(r)]);
        for (std::size_t i = 0; i < op.count; ++i) {
            switch (op.op) {
                case ReduceOp::Sum:
                case ReduceOp::Avg:
                    acc[i] = static_cast<T>(acc[i] + x[i]);
                    break;
                case ReduceOp::Min:
                    acc[i] = std::min(acc[i], x[i]);
                    break;
                case ReduceOp::Max:
                    acc[i] = std::max(acc[i], x[i]);
                    break;
            }
        }
    }
    if (op.op == ReduceOp::Avg) {
        for (auto& v : acc) v = static_cast<T>(v / static_cast<T>(size));
    }
    for (auto* o : op.out) std::memcpy(o, acc.data(), op.count * sizeof(T));
}

void perform(FakeWorld::Op& op, int size) {
    const std::size_t bytes = op.count * dtype_size(op.dtype);
    switch (op.kind) {
        case Kind::Allreduce:
            switch (op.dtype) {
                case DType::Float32:
                    reduce<float>(op, size);
                    break;
                case DType::Float64:
                    reduce<double>(op, size);
                    break;
                case DType::Int32:
                    reduce<std::int32_t>(op, size);
                    break;
                case DType::Int64:
                    reduce<std::int64_t>(op, size);
                    break;
            }
            break;
        case Kind::Broadcast: {
            std::vector<char> src(bytes);
            std::memcpy(src.data(), op.in[static_cast<std::size_t>(op.root)], bytes);
            for (auto* o : op.out) std::memcpy(o, src.data(), bytes);
            break;
        }
        case Kind::Allgather:
            for (auto* o : op.out) {
                for (std::size_t r = 0; r < op.in.size(); ++r) {
                    std::memcpy(static_cast<char*>(o) + r * bytes, op.in[r], bytes);
                }
            }
            break;
        case Kind::Barrier:
            break;
    }
}

class FakeWork : public Work {
  public:
    FakeWork(FakeWorld& world, std::shared_ptr<FakeWorld::Op> op)
        : world_(world), op_(std::move(op)) {}
    void wait() override { world_.wait(op_); }
    bool completed() override { return world_.is_done(op_); }

  private:
    FakeWorld& world_;
    std::shared_ptr<FakeWorld::Op> op_;
};

}  // namespace

std::size_t FakeWorld::completed() const {
    std::lock_guard lock(mu_);
    return completed_;
}

std::size_t FakeWorld::allreduces_issued(int rank) const {
    std::lock_guard lock(mu_);
    auto it = allreduces_.find(rank);
    return it == allreduces_.end() ? 0 : it->second;
}

std::shared_ptr<FakeWorld::Op> FakeWorld::join(int rank, std::uint64_t seq, const Op& mine) {
    std::lock_guard lock(mu_);
    if (mine.kind == Kind::Allreduce) ++allreduces_[rank];
    auto& op = pending_[seq];
    const auto n = static_cast<std::size_t>(size_);
    if (!op) {
        op = std::make_shared<Op>(mine);
        op->in.assign(n, nullptr);
        op->out.assign(n, nullptr);
        op->arrived = 0;
    } else if (op->kind != mine.kind || op->count != mine.count || op->dtype != mine.dtype) {
        op->error = "fake group: rank " + std::to_string(rank) +
                    " issued a different collective #" + std::to_string(seq);
    }
    op->in[static_cast<std::size_t>(rank)] = mine.in[0];
    op->out[static_cast<std::size_t>(rank)] = mine.out[0];
    auto result = op;
    if (++op->arrived == size_) {
        if (op->error.empty()) perform(*op, size_);
        op->done = true;
        ++completed_;
        pending_.erase(seq);
        cv_.notify_all();
    }
    return result;
}

bool FakeWorld::is_done(const std::shared_ptr<Op>& op) const {
    std::lock_guard lock(mu_);
    return op->done;
}

void FakeWorld::wait(const std::shared_ptr<Op>& op) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout_, [&] { return op->done; })) {
        throw CollectiveTimeout("fake collective timed out after " +
                                std::to_string(timeout_.count()) + " ms");
    }
    if (!op->error.empty()) throw CollectiveError(op->error);
}

WorkPtr FakeGroup::issue(const FakeWorld::Op& mine) {
    return std::make_shared<FakeWork>(world_, world_.join(rank_, seq_++, mine));
}

namespace {

FakeWorld::Op make_op(Kind kind, std::size_t count, DType dtype, const void* in, void* out) {
    FakeWorld::Op o;
    o.kind = kind;
    o.count = count;
    o.dtype = dtype;
    o.in = {in};
    o.out = {out};
    return o;
}

}  // namespace

WorkPtr FakeGroup::allreduce(void* data, std::size_t count, DType dtype, ReduceOp op) {
    auto o = make_op(Kind::Allreduce, count, dtype, data, data);
    o.op = op;
    return issue(o);
}

WorkPtr FakeGroup::broadcast(void* data, std::size_t count, DType dtype, int root) {
    auto o = make_op(Kind::Broadcast, count, dtype, data, data);
    o.root = root;
    return issue(o);
}

WorkPtr FakeGroup::allgather(const void* in, void* out, std::size_t count_per_rank, DType dtype) {
    return issue(make_op(Kind::Allgather, count_per_rank, dtype, in, out));
}

WorkPtr FakeGroup::reduce_scatter(const void*, void*, std::size_t, DType, ReduceOp) {
    throw CollectiveError("fake group: reduce_scatter is not implemented");
}

WorkPtr FakeGroup::barrier() {
    return issue(make_op(Kind::Barrier, 0, DType::Float32, nullptr, nullptr));
}

void run_ranks(int size, const std::function<void(int)>& fn) {
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(size));
    {
        std::vector<std::jthread> threads;
        for (int r = 0; r < size; ++r) {
            threads.emplace_back([&, r] {
                try {
                    fn(r);
                } catch (...) {
                    errors[static_cast<std::size_t>(r)] = std::current_exception();
                }
            });
        }
    }
    for (auto& e : errors) {
        if (e) std::rethrow_exception(e);
    }
}

}  // namespace ptrun::ddp::testing
