#include "mlp.hpp"

#include <cmath>
#include <random>

namespace ptrun::examples {
namespace {

/// Uniform in [-bound, bound) from the top 24 bits of a fixed generator (portable, unlike
/// std::uniform_real_distribution).
float uniform(std::mt19937_64& gen, float bound) {
    const auto unit = static_cast<float>(gen() >> 40) / static_cast<float>(1u << 24);
    return (2.0f * unit - 1.0f) * bound;
}

Tensor make(std::string name, std::size_t n) {
    return {std::move(name), std::vector<float>(n), std::vector<float>(n)};
}

}  // namespace

Mlp::Mlp(std::size_t hidden, std::uint64_t seed) : hidden_(hidden) {
    const std::size_t h = hidden;
    params_ = {make("w1", h), make("b1", h), make("w2", h * h),
               make("b2", h), make("w3", h), make("b3", 1)};
    std::mt19937_64 gen(seed);
    for (auto& v : params_[kW1].value) v = uniform(gen, 1.0f);
    const float bound = 1.0f / std::sqrt(static_cast<float>(h));
    for (auto& v : params_[kW2].value) v = uniform(gen, bound);
    for (auto& v : params_[kW3].value) v = uniform(gen, bound);
}

float Mlp::predict(float x) const {
    const std::size_t h = hidden_;
    const auto& w1 = params_[kW1].value;
    const auto& b1 = params_[kB1].value;
    const auto& w2 = params_[kW2].value;
    const auto& b2 = params_[kB2].value;
    const auto& w3 = params_[kW3].value;
    std::vector<float> z1(h);
    for (std::size_t j = 0; j < h; ++j) z1[j] = std::tanh(w1[j] * x + b1[j]);
    float out = params_[kB3].value[0];
    for (std::size_t i = 0; i < h; ++i) {
        float a = b2[i];
        for (std::size_t j = 0; j < h; ++j) a += w2[i * h + j] * z1[j];
        out += w3[i] * std::tanh(a);
    }
    return out;
}

double Mlp::loss_and_grad(const std::vector<float>& x, const std::vector<float>& y,
                          const std::function<void(std::size_t)>& grad_ready) {
    const std::size_t h = hidden_, batch = x.size();
    const auto& w1 = params_[kW1].value;
    const auto& b1 = params_[kB1].value;
    const auto& w2 = params_[kW2].value;
    const auto& b2 = params_[kB2].value;
    const auto& w3 = params_[kW3].value;
    const float b3 = params_[kB3].value[0];

    // Forward over the batch, keeping the activations for backward.
    std::vector<float> z1(batch * h), z2(batch * h), out(batch);
    for (std::size_t s = 0; s < batch; ++s) {
        float* a1 = &z1[s * h];
        float* a2 = &z2[s * h];
        for (std::size_t j = 0; j < h; ++j) a1[j] = std::tanh(w1[j] * x[s] + b1[j]);
        float o = b3;
        for (std::size_t i = 0; i < h; ++i) {
            float a = b2[i];
            for (std::size_t j = 0; j < h; ++j) a += w2[i * h + j] * a1[j];
            a2[i] = std::tanh(a);
            o += w3[i] * a2[i];
        }
        out[s] = o;
    }

    // Output layer: dL/dout = 2 (out - y) / batch. Gradients accumulate in double.
    double loss = 0;
    std::vector<float> dout(batch);
    for (std::size_t s = 0; s < batch; ++s) {
        const float err = out[s] - y[s];
        loss += static_cast<double>(err) * err;
        dout[s] = 2.0f * err / static_cast<float>(batch);
    }
    std::vector<double> acc(h * h);
    auto flush = [&](std::size_t index) {
        auto& g = params_[index].grad;
        for (std::size_t k = 0; k < g.size(); ++k) g[k] = static_cast<float>(acc[k]);
        std::fill(acc.begin(), acc.end(), 0.0);
        grad_ready(index);
    };
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::size_t s = 0; s < batch; ++s) acc[0] += dout[s];
    flush(kB3);
    for (std::size_t s = 0; s < batch; ++s) {
        for (std::size_t i = 0; i < h; ++i) acc[i] += static_cast<double>(dout[s]) * z2[s * h + i];
    }
    flush(kW3);

    // Hidden layer 2: da2 = dout * w3 * (1 - z2^2).
    std::vector<float> da2(batch * h);
    for (std::size_t s = 0; s < batch; ++s) {
        for (std::size_t i = 0; i < h; ++i) {
            const float z = z2[s * h + i];
            da2[s * h + i] = dout[s] * w3[i] * (1.0f - z * z);
        }
    }
    for (std::size_t s = 0; s < batch; ++s) {
        for (std::size_t i = 0; i < h; ++i) acc[i] += da2[s * h + i];
    }
    flush(kB2);
    for (std::size_t s = 0; s < batch; ++s) {
        for (std::size_t i = 0; i < h; ++i) {
            const double d = da2[s * h + i];
            for (std::size_t j = 0; j < h; ++j) acc[i * h + j] += d * z1[s * h + j];
        }
    }
    flush(kW2);

    // Hidden layer 1: da1 = (w2^T da2) * (1 - z1^2).
    std::vector<float> da1(batch * h);
    for (std::size_t s = 0; s < batch; ++s) {
        for (std::size_t j = 0; j < h; ++j) {
            float d = 0;
            for (std::size_t i = 0; i < h; ++i) d += w2[i * h + j] * da2[s * h + i];
            const float z = z1[s * h + j];
            da1[s * h + j] = d * (1.0f - z * z);
        }
    }
    for (std::size_t s = 0; s < batch; ++s) {
        for (std::size_t j = 0; j < h; ++j) acc[j] += da1[s * h + j];
    }
    flush(kB1);
    for (std::size_t s = 0; s < batch; ++s) {
        for (std::size_t j = 0; j < h; ++j) acc[j] += static_cast<double>(da1[s * h + j]) * x[s];
    }
    flush(kW1);
    return loss / static_cast<double>(batch);
}

}  // namespace ptrun::examples
