// Adam and the cosine schedule: see adam.h.
#include "gpu/reconstruct/adam.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

namespace recon::gpu::sga {

double cosine_schedule(double alpha, double lr_base, double lr_end) {
  return lr_end + (lr_base - lr_end) * (1.0 + std::cos(alpha * std::numbers::pi)) / 2.0;
}

Adam::Adam(std::vector<int> trainable, double beta1, double beta2, double eps)
    : trainable_(std::move(trainable)),
      m_(trainable_.size(), 0.0),
      v_(trainable_.size(), 0.0),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps) {}

void Adam::step(std::span<double> x, std::span<const double> grad, double lr, WorkerPool* pool) {
  ++step_;
  // The same operations, in the same order, as torch's single-tensor Adam (_single_tensor_adam):
  // m.lerp_(g, 1-b1); v = v*b2 + (1-b2)*g*g; p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps).
  const double bias_correction1 = 1.0 - std::pow(beta1_, step_);
  const double bias_correction2 = 1.0 - std::pow(beta2_, step_);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  const double w = 1.0 - beta1_;
  const auto update = [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) {
      const auto i = static_cast<std::size_t>(trainable_[k]);
      const double g = grad[i];
      m_[k] = m_[k] + w * (g - m_[k]);
      v_[k] = v_[k] * beta2_ + (1.0 - beta2_) * g * g;
      const double denom = std::sqrt(v_[k]) / bias_correction2_sqrt + eps_;
      x[i] -= step_size * (m_[k] / denom);
    }
  };
  constexpr std::size_t kChunk = 8192;
  const std::size_t n = trainable_.size();
  if (pool == nullptr || n <= kChunk) {
    update(0, n);
    return;
  }
  pool->run(static_cast<int>((n + kChunk - 1) / kChunk), [&](int c) {
    update(static_cast<std::size_t>(c) * kChunk, std::min(n, (static_cast<std::size_t>(c) + 1) * kChunk));
  });
}

}  // namespace recon::gpu::sga
