// torch.optim.Adam as the sparse alignment uses it (weight decay 0, no amsgrad) and its cosine
// learning-rate schedule (mast3r/cloud_opt/utils/schedules.py). Only the entries a stage trains
// are touched; the moments live as long as one stage (the official creates a new Adam per stage).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gpu/reconstruct/worker_pool.h"

namespace recon::gpu::sga {

// lr_end + (lr_base - lr_end)(1 + cos(pi * alpha)) / 2, alpha = iteration / niter.
double cosine_schedule(double alpha, double lr_base, double lr_end = 0.0);

class Adam {
 public:
  // `trainable` lists the parameter indices this stage optimises.
  explicit Adam(std::vector<int> trainable, double beta1 = 0.9, double beta2 = 0.9, double eps = 1e-8);

  // One torch Adam step with learning rate `lr` on the trainable entries of x. Entries are
  // independent, so `pool` (if any) splits them into chunks without changing the result.
  void step(std::span<double> x, std::span<const double> grad, double lr, WorkerPool* pool = nullptr);

  int steps() const { return step_; }
  const std::vector<int>& trainable() const { return trainable_; }

 private:
  std::vector<int> trainable_;
  std::vector<double> m_, v_;  // indexed like trainable_
  double beta1_, beta2_, eps_;
  int step_ = 0;
};

}  // namespace recon::gpu::sga
