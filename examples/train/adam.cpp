#include "adam.hpp"

#include <cmath>

namespace ptrun::examples {

Adam::Adam(const std::vector<Tensor>& params, const AdamOptions& options) : options_(options) {
    for (const auto& p : params) {
        m_.emplace_back(p.value.size(), 0.0f);
        v_.emplace_back(p.value.size(), 0.0f);
    }
}

void Adam::update(std::vector<Tensor>& params, std::uint64_t step) {
    const auto t = static_cast<double>(step);
    const auto c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(options_.beta1), t));
    const auto c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(options_.beta2), t));
    for (std::size_t p = 0; p < params.size(); ++p) {
        auto& value = params[p].value;
        const auto& grad = params[p].grad;
        for (std::size_t k = 0; k < value.size(); ++k) {
            const float g = grad[k];
            m_[p][k] = options_.beta1 * m_[p][k] + (1.0f - options_.beta1) * g;
            v_[p][k] = options_.beta2 * v_[p][k] + (1.0f - options_.beta2) * g * g;
            const float mhat = m_[p][k] / c1;
            const float vhat = v_[p][k] / c2;
            value[k] -= options_.lr * mhat / (std::sqrt(vhat) + options_.eps);
        }
    }
}

}  // namespace ptrun::examples
