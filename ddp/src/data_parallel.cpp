#include "ptrun/ddp/data_parallel.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "ptrun/ddp/errors.hpp"

namespace ptrun::ddp {

struct DataParallel::Impl {
    struct Param {
        std::string name;
        float* param;
        float* grad;
        std::size_t count;
        std::size_t bucket = 0;
        std::size_t offset = 0;  ///< in the bucket's flat buffer
        bool ready = false;
    };
    struct Bucket {
        std::vector<std::size_t> params;
        std::vector<float> flat;  ///< gradients packed for one allreduce, reused every step
        std::size_t pending = 0;  ///< gradients not yet marked this step
        WorkPtr work;
    };

    ProcessGroup& pg;
    DataParallelOptions options;
    std::vector<Param> params;
    std::vector<Bucket> buckets;
    std::size_t next_to_issue = 0;
    bool frozen = false;

    Impl(ProcessGroup& group, const DataParallelOptions& opts) : pg(group), options(opts) {}

    void freeze() {
        if (frozen) return;
        frozen = true;
        check_same_registration();
        std::size_t bytes = 0;
        for (auto i = params.size(); i-- > 0;) {
            const auto size = params[i].count * sizeof(float);
            if (buckets.empty() || (bytes > 0 && bytes + size > options.bucket_bytes)) {
                buckets.emplace_back();
                bytes = 0;
            }
            auto& b = buckets.back();
            params[i].bucket = buckets.size() - 1;
            params[i].offset = b.flat.size();
            b.params.push_back(i);
            b.flat.resize(b.flat.size() + params[i].count);
            bytes += size;
        }
        reset();
    }

    /// Every rank must register the same sizes in the same order, or the buckets' collectives
    /// would mismatch: one allgather of (parameter count, total floats, hash of the sizes).
    void check_same_registration() {
        std::uint64_t hash = 14695981039346656037ULL, total = 0;
        for (const auto& p : params) {
            hash = (hash ^ p.count) * 1099511628211ULL;
            total += p.count;
        }
        const std::int64_t mine[3] = {static_cast<std::int64_t>(params.size()),
                                      static_cast<std::int64_t>(total),
                                      static_cast<std::int64_t>(hash)};
        std::vector<std::int64_t> all(3 * static_cast<std::size_t>(pg.size()));
        pg.allgather(mine, all.data(), 3, DType::Int64)->wait();
        for (std::size_t r = 0; r < all.size() / 3; ++r) {
            if (all[3 * r] != mine[0] || all[3 * r + 1] != mine[1] || all[3 * r + 2] != mine[2]) {
                throw CollectiveError("DataParallel: rank " + std::to_string(r) + " registered " +
                                      std::to_string(all[3 * r]) + " parameters (" +
                                      std::to_string(all[3 * r + 1]) + " floats), rank " +
                                      std::to_string(pg.rank()) + " registered " +
                                      std::to_string(mine[0]) + " (" + std::to_string(mine[1]) +
                                      " floats); every rank must register the same parameter sizes "
                                      "in the same order");
            }
        }
    }

    void reset() {
        for (auto& p : params) p.ready = false;
        for (auto& b : buckets) {
            b.pending = b.params.size();
            b.work.reset();
        }
        next_to_issue = 0;
    }

    /// Issues every complete bucket, in bucket order, up to the first incomplete one.
    void issue_ready() {
        while (next_to_issue < buckets.size() && buckets[next_to_issue].pending == 0) {
            auto& b = buckets[next_to_issue++];
            if (!b.flat.empty()) {
                b.work = pg.allreduce(b.flat.data(), b.flat.size(), DType::Float32, ReduceOp::Sum);
            }
        }
    }
};

DataParallel::DataParallel(ProcessGroup& pg, const DataParallelOptions& options)
    : impl_(std::make_unique<Impl>(pg, options)) {}

DataParallel::~DataParallel() = default;

std::size_t DataParallel::add_parameter(std::string name, float* param, float* grad,
                                        std::size_t count) {
    if (impl_->frozen) {
        throw std::logic_error("DataParallel::add_parameter('" + name +
                               "') after the buckets were laid out");
    }
    if (count > 0 && (param == nullptr || grad == nullptr)) {
        throw std::invalid_argument("DataParallel::add_parameter('" + name + "'): null buffer");
    }
    impl_->params.push_back({std::move(name), param, grad, count});
    return impl_->params.size() - 1;
}

void DataParallel::broadcast_parameters() {
    impl_->freeze();
    std::vector<WorkPtr> works;
    for (auto& p : impl_->params) {
        if (p.count > 0) works.push_back(impl_->pg.broadcast(p.param, p.count, DType::Float32, 0));
    }
    for (auto& w : works) w->wait();
}

void DataParallel::mark_grad_ready(std::size_t index) {
    impl_->freeze();
    if (index >= impl_->params.size()) {
        throw std::logic_error("DataParallel::mark_grad_ready(" + std::to_string(index) +
                               "): only " + std::to_string(impl_->params.size()) +
                               " parameters registered");
    }
    auto& p = impl_->params[index];
    if (p.ready) {
        throw std::logic_error("DataParallel::mark_grad_ready: '" + p.name +
                               "' marked twice in one step");
    }
    p.ready = true;
    auto& b = impl_->buckets[p.bucket];
    std::copy_n(p.grad, p.count, b.flat.begin() + static_cast<std::ptrdiff_t>(p.offset));
    --b.pending;
    impl_->issue_ready();
}

void DataParallel::finish() {
    impl_->freeze();
    std::string missing;
    for (const auto& p : impl_->params) {
        if (!p.ready) missing += (missing.empty() ? "'" : ", '") + p.name + "'";
    }
    if (!missing.empty()) {
        // Buckets already issued stay in flight; wait for them so that no collective outlives
        // the step (the other ranks issue them too).
        for (auto& b : impl_->buckets) {
            if (b.work) b.work->wait();
        }
        impl_->reset();
        throw std::logic_error("DataParallel::finish: gradients never marked ready: " + missing);
    }
    try {
        for (auto& b : impl_->buckets) {
            if (b.work) b.work->wait();
        }
    } catch (...) {
        impl_->reset();
        throw;
    }
    const auto world = static_cast<float>(impl_->pg.size());
    for (auto& p : impl_->params) {
        const float* src = impl_->buckets[p.bucket].flat.data() + p.offset;
        for (std::size_t i = 0; i < p.count; ++i) p.grad[i] = src[i] / world;
    }
    impl_->reset();
}

std::size_t DataParallel::buckets_issued() const { return impl_->next_to_issue; }

BucketLayout DataParallel::layout() const {
    impl_->freeze();
    BucketLayout out;
    for (const auto& b : impl_->buckets) out.buckets.push_back(b.params);
    return out;
}

std::size_t DataParallel::parameter_count() const { return impl_->params.size(); }

}  // namespace ptrun::ddp
