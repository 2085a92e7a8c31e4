// The C++ baseline of matmul_latency.c (cpp_baseline.h): recorded gpu::Graphs replayed with
// Graph::run(), exactly the work the C API's calls submit.
#include "cpp_baseline.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpu/graph.h"
#include "gpu/ops/matmul.h"
#include "gpu/runtime.h"

using namespace recon;
using namespace recon::gpu;

struct cpp_baseline {
  std::unique_ptr<Runtime> rt;
  Tensor a, b, c0, c1;
  std::unique_ptr<Graph> single, chain;  // declared after rt and the tensors: destroyed first
};

namespace {

Status open(cpp_baseline& base, uint32_t device, int n, int ops) {
  RuntimeOptions options;
  options.context.device = std::to_string(device);
  options.pipeline_cache_path = "none";
  RECON_ASSIGN_OR_RETURN(base.rt, Runtime::create(options));
  Runtime& rt = *base.rt;
  const Shape square{n, n};
  const std::vector<float> values(static_cast<size_t>(n) * n, 1.0f / static_cast<float>(n));
  RECON_ASSIGN_OR_RETURN(base.a, Tensor::from_host(rt, DType::kF32, square, values.data(), values.size() * 4));
  RECON_ASSIGN_OR_RETURN(base.b, Tensor::from_host(rt, DType::kF32, square, values.data(), values.size() * 4));
  RECON_ASSIGN_OR_RETURN(base.c0, Tensor::empty(rt, DType::kF32, square));
  RECON_ASSIGN_OR_RETURN(base.c1, Tensor::empty(rt, DType::kF32, square));
  base.single = std::make_unique<Graph>(rt);
  RECON_RETURN_IF_ERROR(ops::matmul(*base.single, rt.caps(), base.a, base.b, base.c0));
  base.chain = std::make_unique<Graph>(rt);  // c0 = a·b, c1 = c0·b, c0 = c1·b, …
  for (int i = 0; i < ops; ++i) {
    const Tensor& in = i == 0 ? base.a : (i % 2 == 1 ? base.c0 : base.c1);
    RECON_RETURN_IF_ERROR(ops::matmul(*base.chain, rt.caps(), in, base.b, i % 2 == 0 ? base.c0 : base.c1));
  }
  for (int i = 0; i < 3; ++i) {
    RECON_RETURN_IF_ERROR(base.single->run());
    RECON_RETURN_IF_ERROR(base.chain->run());
  }
  return Status::ok();
}

}  // namespace

extern "C" {

cpp_baseline* cpp_baseline_open(uint32_t device, int n, int ops) {
  auto base = std::make_unique<cpp_baseline>();
  const Status s = open(*base, device, n, ops);
  if (!s.is_ok()) {
    std::fprintf(stderr, "C++ baseline: %s\n", s.to_string().c_str());
    return nullptr;
  }
  return base.release();
}

int cpp_baseline_time(cpp_baseline* base, int chain, int count, double* samples) {
  Graph& g = chain ? *base->chain : *base->single;
  for (int i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const Status s = g.run();
    samples[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!s.is_ok()) {
      std::fprintf(stderr, "C++ baseline: %s\n", s.to_string().c_str());
      return 1;
    }
  }
  return 0;
}

void cpp_baseline_close(cpp_baseline* base) {
  delete base;
}

}  // extern "C"
