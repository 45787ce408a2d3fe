#pragma once
/// A small multilayer perceptron, 1 -> H -> H -> 1 with tanh, in plain C++: forward, backward
/// written out, deterministic initialisation. The `train` example fits y = sin(2 pi x) with it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ptrun::examples {

/// One parameter tensor and its gradient (flat, row-major).
struct Tensor {
    std::string name;
    std::vector<float> value;
    std::vector<float> grad;
};

class Mlp {
  public:
    /// Parameters in registration (input to output) order: w1, b1, w2, b2, w3, b3.
    enum Index : std::size_t { kW1, kB1, kW2, kB2, kW3, kB3, kCount };

    /// Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) weights and zero biases from `seed`; the same
    /// values on every platform.
    Mlp(std::size_t hidden, std::uint64_t seed);

    std::vector<Tensor>& params() { return params_; }
    const std::vector<Tensor>& params() const { return params_; }
    std::size_t hidden() const { return hidden_; }

    /// The prediction for one input.
    float predict(float x) const;

    /// Mean squared error over the batch, and its gradient written into every Tensor::grad
    /// (overwriting). Backward runs layer by layer over the whole batch, output layer first, and
    /// calls grad_ready(index) as soon as a parameter's gradient is final, so the caller can start
    /// averaging it while the earlier layers are still being computed.
    double loss_and_grad(const std::vector<float>& x, const std::vector<float>& y,
                         const std::function<void(std::size_t)>& grad_ready);

  private:
    std::size_t hidden_;
    std::vector<Tensor> params_;
};

}  // namespace ptrun::examples
