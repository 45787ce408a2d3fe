#pragma once
/// Adam over a list of Tensors, with its moment buffers exposed for checkpoints.

#include <cstdint>
#include <vector>

#include "mlp.hpp"

namespace ptrun::examples {

struct AdamOptions {
    float lr = 1e-2f;
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-8f;
};

class Adam {
  public:
    /// Zero moments shaped like `params`.
    Adam(const std::vector<Tensor>& params, const AdamOptions& options);

    /// One update from each Tensor::grad; `step` counts from 1 (bias correction).
    void update(std::vector<Tensor>& params, std::uint64_t step);

    std::vector<std::vector<float>>& first_moments() { return m_; }
    std::vector<std::vector<float>>& second_moments() { return v_; }

  private:
    AdamOptions options_;
    std::vector<std::vector<float>> m_, v_;
};

}  // namespace ptrun::examples
