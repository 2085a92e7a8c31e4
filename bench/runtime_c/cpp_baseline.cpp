// The C++ baseline of matmul_latency.c (cpp_baseline.h): one recorded gpu::Graph per figure,
// replayed with Graph::run(), exactly the work the C API's calls submit.
#include "cpp_baseline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpu/graph.h"
#include "gpu/ops/matmul.h"
#include "gpu/runtime.h"

namespace {

using namespace recon;
using namespace recon::gpu;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Median microseconds of `iters` runs of `g` after three warm-up runs.
Result<double> time_runs(Graph& g, int iters) {
  for (int i = 0; i < 3; ++i) RECON_RETURN_IF_ERROR(g.run());
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    RECON_RETURN_IF_ERROR(g.run());
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  return median(us);
}

Status run(uint32_t device, int n, int ops, int iters, int sequence_iters, cpp_baseline_result& out) {
  RuntimeOptions options;
  options.context.device = std::to_string(device);
  options.pipeline_cache_path = "none";
  RECON_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt, Runtime::create(options));
  const Shape square{n, n};
  const std::vector<float> ones(static_cast<size_t>(n) * n, 1.0f / static_cast<float>(n));
  RECON_ASSIGN_OR_RETURN(Tensor a, Tensor::from_host(*rt, DType::kF32, square, ones.data(), ones.size() * 4));
  RECON_ASSIGN_OR_RETURN(Tensor b, Tensor::from_host(*rt, DType::kF32, square, ones.data(), ones.size() * 4));
  RECON_ASSIGN_OR_RETURN(Tensor c0, Tensor::empty(*rt, DType::kF32, square));
  RECON_ASSIGN_OR_RETURN(Tensor c1, Tensor::empty(*rt, DType::kF32, square));
  {
    Graph g(*rt);
    RECON_RETURN_IF_ERROR(ops::matmul(g, rt->caps(), a, b, c0));
    RECON_ASSIGN_OR_RETURN(out.single_us, time_runs(g, iters));
  }
  Graph chain(*rt);  // c0 = a·b, c1 = c0·b, c0 = c1·b, …
  for (int i = 0; i < ops; ++i) {
    const Tensor& in = i == 0 ? a : (i % 2 == 1 ? c0 : c1);
    RECON_RETURN_IF_ERROR(ops::matmul(chain, rt->caps(), in, b, i % 2 == 0 ? c0 : c1));
  }
  RECON_ASSIGN_OR_RETURN(const double total, time_runs(chain, sequence_iters));
  out.per_op_us = total / ops;
  return Status::ok();
}

}  // namespace

extern "C" int cpp_baseline_run(uint32_t device, int n, int ops, int iters, int sequence_iters,
                                cpp_baseline_result* out) {
  const Status s = run(device, n, ops, iters, sequence_iters, *out);
  if (!s.is_ok()) {
    std::fprintf(stderr, "C++ baseline: %s\n", s.to_string().c_str());
    return 1;
  }
  return 0;
}
