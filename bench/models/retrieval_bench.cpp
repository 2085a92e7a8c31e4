// recon_bench_retrieval: the retrieval head and pair selection (gpu/models/retrieval/) for a set
// of 64 images, wall time per call (allocation, graph recording, submission, wait).
//
//   retrieval_encode/<size>       RetrievalModel::encode on [64, N, D] f32 tokens: whitening (the
//                                 trainingfree head: prewhiten only), attention, top-300 tokens,
//                                 global embedding. Counters: ms per batch, images/s, and the
//                                 whitening GEMM alone ([64·N, D]·[D, D] fp32, its own graph) as the
//                                 baseline: ratio_vs_baseline = gemm_ms / encode_ms (the share of
//                                 the time the unavoidable GEMM takes; 1 = no overhead).
//   retrieval_top_pairs/<size>    select_top_pairs on [64, D] embeddings, k = 10: the 64×64
//                                 similarity and top-k. Baseline: the same on the CPU in float64,
//                                 one thread, measured in the same run (ratio > 1: the GPU is faster).
// size: tiny = D 64, N 96 (always); full = D 1024, N 768 (512×384 at patch 16; registered on GPUs
// or with RECON_RETRIEVAL_FULL=1 — on lavapipe one full encode takes minutes).
// Device: RECON_DEVICE (index or name substring), as for every recon tool.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpu/graph.h"
#include "gpu/models/retrieval/retrieval.h"
#include "gpu/ops/matmul.h"
#include "gpu/runtime.h"
#include "gpu/weights/safetensors_writer.h"

namespace recon::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kImages = 64;
constexpr int kTopK = 10;

struct Size {
  const char* name;
  int64_t dim, tokens;
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// A trainingfree head of width d with a random whitening (values do not change the cost).
Result<std::unique_ptr<gpu::RetrievalModel>> make_model(gpu::Runtime& rt, int64_t d) {
  std::vector<double> m(static_cast<size_t>(d)), p(static_cast<size_t>(d * d));
  const std::vector<float> r = gaussian(m.size() + p.size(), 1);
  for (size_t i = 0; i < m.size(); ++i) m[i] = r[i];
  for (size_t i = 0; i < p.size(); ++i) p[i] = r[m.size() + i] / std::sqrt(double(d));
  gpu::SafetensorsWriter w;
  w.add_metadata(gpu::kRetrievalMetadataKey, "{\"dim\":" + std::to_string(d) + ",\"nfeat\":300}");
  RECON_RETURN_IF_ERROR(w.add_tensor("prewhiten.m", gpu::Dtype::kF64, {1, d}, std::as_bytes(std::span(m))));
  RECON_RETURN_IF_ERROR(w.add_tensor("prewhiten.p", gpu::Dtype::kF64, {d, d}, std::as_bytes(std::span(p))));
  RECON_ASSIGN_OR_RETURN(gpu::SafetensorsFile file, gpu::SafetensorsFile::from_bytes(w.serialize()));
  return gpu::RetrievalModel::from_safetensors(rt, file);
}

// The baseline of the encode benchmark: only the whitening GEMM, one recorded graph per call as
// encode() records one.
Result<double> whitening_gemm_ms(gpu::Runtime& rt, const gpu::Tensor& x, const gpu::Tensor& p, const gpu::Tensor& y) {
  const auto t0 = Clock::now();
  gpu::Graph g(rt);
  gpu::ops::MatmulOptions o;
  o.path = gpu::ops::GemmPath::kScalar;
  RECON_RETURN_IF_ERROR(gpu::ops::matmul(g, rt.caps(), x, p, y, o));
  RECON_RETURN_IF_ERROR(g.run());
  return ms_since(t0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void encode(benchmark::State& state, gpu::Runtime* rt, Size size) {
  auto model = make_model(*rt, size.dim);
  const int64_t rows = kImages * size.tokens;
  auto tokens = gpu::Tensor::empty(*rt, gpu::DType::kF32, {kImages, size.tokens, size.dim});
  auto flat = gpu::Tensor::empty(*rt, gpu::DType::kF32, {rows, size.dim});
  auto proj = gpu::Tensor::empty(*rt, gpu::DType::kF32, {size.dim, size.dim});
  auto out = gpu::Tensor::empty(*rt, gpu::DType::kF32, {rows, size.dim});
  if (!model.is_ok() || !tokens.is_ok() || !flat.is_ok() || !proj.is_ok() || !out.is_ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  const std::vector<float> host = gaussian(static_cast<size_t>(rows * size.dim), 2);
  if (!tokens->upload(*rt, host.data(), host.size() * 4).is_ok() ||
      !flat->upload(*rt, host.data(), host.size() * 4).is_ok()) {
    state.SkipWithError("upload failed");
    return;
  }
  // Warm-up: the first call builds the pipelines.
  if (!(*model)->encode(*tokens).is_ok() || !whitening_gemm_ms(*rt, *flat, *proj, *out).is_ok()) {
    state.SkipWithError("warm-up failed");
    return;
  }
  std::vector<double> encode_ms, gemm_ms;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto r = (*model)->encode(*tokens);
    const double ms = ms_since(t0);
    if (!r.is_ok()) {
      state.SkipWithError(r.status().to_string().c_str());
      return;
    }
    state.SetIterationTime(ms / 1e3);
    encode_ms.push_back(ms);
    auto b = whitening_gemm_ms(*rt, *flat, *proj, *out);
    if (!b.is_ok()) {
      state.SkipWithError(b.status().to_string().c_str());
      return;
    }
    gemm_ms.push_back(*b);
  }
  const double e = median(encode_ms), g = median(gemm_ms);
  state.counters["ms_per_batch"] = e;
  state.counters["images_per_s"] = 1e3 * double(kImages) / e;
  state.counters["baseline_gemm_ms"] = g;
  state.counters["ratio_vs_baseline"] = g / e;
  state.counters["gemm_tflops"] = 2.0 * double(rows) * double(size.dim * size.dim) / (g * 1e9);
}

// CPU float64 reference of select_top_pairs: normalise, G·Gᵀ, top-k of each row without itself.
void cpu_top_pairs(const std::vector<float>& g, int64_t d, std::vector<int32_t>& idx) {
  std::vector<double> unit(g.size());
  for (int64_t i = 0; i < kImages; ++i) {
    double n = 0;
    for (int64_t c = 0; c < d; ++c) n += double(g[i * d + c]) * g[i * d + c];
    for (int64_t c = 0; c < d; ++c) unit[i * d + c] = g[i * d + c] / std::sqrt(n);
  }
  idx.assign(static_cast<size_t>(kImages * kTopK), 0);
  std::vector<double> s(kImages);
  std::vector<int32_t> order(kImages);
  for (int64_t i = 0; i < kImages; ++i) {
    for (int64_t j = 0; j < kImages; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += unit[i * d + c] * unit[j * d + c];
      s[j] = j == i ? -INFINITY : dot;
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + kTopK, order.end(),
                      [&](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
    std::copy(order.begin(), order.begin() + kTopK, idx.begin() + i * kTopK);
  }
}

void top_pairs(benchmark::State& state, gpu::Runtime* rt, Size size) {
  const std::vector<float> host = gaussian(static_cast<size_t>(kImages * size.dim), 3);
  auto g = gpu::Tensor::from_host(*rt, gpu::DType::kF32, {kImages, size.dim}, host.data(), host.size() * 4);
  if (!g.is_ok()) {
    state.SkipWithError("upload failed");
    return;
  }
  if (!gpu::select_top_pairs(*rt, *g, kTopK).is_ok()) {  // warm-up: builds the pipelines
    state.SkipWithError("warm-up failed");
    return;
  }
  std::vector<double> gpu_ms, cpu_ms;
  bool agree = true;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto r = gpu::select_top_pairs(*rt, *g, kTopK);
    const double ms = ms_since(t0);
    if (!r.is_ok()) {
      state.SkipWithError(r.status().to_string().c_str());
      return;
    }
    state.SetIterationTime(ms / 1e3);
    gpu_ms.push_back(ms);
    const auto t1 = Clock::now();
    std::vector<int32_t> want;
    cpu_top_pairs(host, size.dim, want);
    cpu_ms.push_back(ms_since(t1));
    auto h = r->to_host(*rt);
    agree = agree && h.is_ok() && h->indices == want;
  }
  const double gm = median(gpu_ms), cm = median(cpu_ms);
  state.counters["ms_per_call"] = gm;
  state.counters["baseline_cpu_ms"] = cm;
  state.counters["ratio_vs_baseline"] = cm / gm;
  state.counters["cpu_agrees"] = agree ? 1 : 0;
}

}  // namespace
}  // namespace recon::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  recon::gpu::RuntimeOptions options;
  options.pipeline_cache_path = "none";
  auto rt = recon::gpu::Runtime::create(options);
  if (!rt.is_ok()) {
    std::fprintf(stderr, "recon_bench_retrieval: no GPU runtime: %s\n", rt.status().to_string().c_str());
    return 1;
  }
  recon::gpu::Runtime* r = rt->get();
  benchmark::AddCustomContext("recon_device", r->caps().device_name);
  std::vector<recon::bench::Size> sizes = {{"tiny_d64_n96", 64, 96}};
  const char* full = std::getenv("RECON_RETRIEVAL_FULL");
  if (r->caps().device_type != VK_PHYSICAL_DEVICE_TYPE_CPU || (full && std::string(full) == "1")) {
    sizes.push_back({"full_d1024_n768", 1024, 768});
  }
  for (const auto& s : sizes) {
    benchmark::RegisterBenchmark((std::string("retrieval_encode/") + s.name).c_str(), recon::bench::encode, r, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("retrieval_top_pairs/") + s.name).c_str(), recon::bench::top_pairs, r, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
