#include "gpu/self_check.h"

#include <chrono>
#include <cmath>
#include <random>

#include "gpu/graph.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/matmul_tiled.h"
#include "gpu/runtime.h"

namespace recon::gpu {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

Result<double> timed_run(Graph& g) {
  auto start = std::chrono::steady_clock::now();
  RECON_RETURN_IF_ERROR(g.run());
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

Result<std::vector<float>> read(Runtime& rt, const Tensor& t) {
  std::vector<float> out(t.numel());
  RECON_RETURN_IF_ERROR(t.download(rt, out.data(), out.size() * sizeof(float)));
  return out;
}

SelfCheckItem judge(std::string name, double error, double tolerance, double ms) {
  SelfCheckItem item{std::move(name), error <= tolerance, error, tolerance, ms, ""};
  if (!item.passed) item.detail = "error " + std::to_string(error) + " exceeds " + std::to_string(tolerance);
  return item;
}

}  // namespace

Result<std::vector<SelfCheckItem>> run_self_check(Runtime& rt) {
  std::vector<SelfCheckItem> items;
  const int64_t n = 100003;  // not a multiple of any workgroup size
  auto a = random_values(n, 1), b = random_values(n, 2);
  RECON_ASSIGN_OR_RETURN(Tensor ta, Tensor::from_host(rt, DType::kF32, {n}, a.data(), n * 4));
  RECON_ASSIGN_OR_RETURN(Tensor tb, Tensor::from_host(rt, DType::kF32, {n}, b.data(), n * 4));
  RECON_ASSIGN_OR_RETURN(Tensor tc, Tensor::empty(rt, DType::kF32, {n}));

  {
    Graph g(rt);
    RECON_RETURN_IF_ERROR(ops::fill(g, tc, 0.5f));
    RECON_ASSIGN_OR_RETURN(double ms, timed_run(g));
    RECON_ASSIGN_OR_RETURN(auto out, read(rt, tc));
    double err = 0;
    for (float v : out) err = std::max(err, std::isfinite(v) ? std::abs(v - 0.5) : INFINITY);
    items.push_back(judge("fill", err, 0, ms));
  }
  {
    Graph g(rt);
    RECON_RETURN_IF_ERROR(ops::copy(g, ta, tc));
    RECON_ASSIGN_OR_RETURN(double ms, timed_run(g));
    RECON_ASSIGN_OR_RETURN(auto out, read(rt, tc));
    double err = out == a ? 0 : 1;
    items.push_back(judge("shader copy", err, 0, ms));
  }
  {
    Graph g(rt);
    RECON_RETURN_IF_ERROR(ops::add(g, ta, tb, tc));
    RECON_ASSIGN_OR_RETURN(double ms, timed_run(g));
    RECON_ASSIGN_OR_RETURN(auto out, read(rt, tc));
    double err = 0;
    for (int64_t i = 0; i < n; ++i) {
      err = std::max(err, std::isfinite(out[i]) ? std::abs(double(out[i]) - (double(a[i]) + double(b[i]))) : INFINITY);
    }
    items.push_back(judge("add", err, 1e-7, ms));
  }
  {
    const int64_t m = 67, k = 129, nn = 45;
    auto x = random_values(m * k, 3), y = random_values(k * nn, 4);
    RECON_ASSIGN_OR_RETURN(Tensor tx, Tensor::from_host(rt, DType::kF32, {m, k}, x.data(), x.size() * 4));
    RECON_ASSIGN_OR_RETURN(Tensor ty, Tensor::from_host(rt, DType::kF32, {k, nn}, y.data(), y.size() * 4));
    RECON_ASSIGN_OR_RETURN(Tensor tz, Tensor::empty(rt, DType::kF32, {m, nn}));
    Graph g(rt);
    RECON_RETURN_IF_ERROR(ops::matmul_tiled(g, tx, ty, tz));
    RECON_ASSIGN_OR_RETURN(double ms, timed_run(g));
    RECON_ASSIGN_OR_RETURN(auto out, read(rt, tz));
    double err = 0;  // relative to Σ|x·y|, the scale of a dot product's rounding error
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < nn; ++j) {
        double want = 0, scale = 0;
        for (int64_t q = 0; q < k; ++q) {
          want += double(x[i * k + q]) * double(y[q * nn + j]);
          scale += std::abs(double(x[i * k + q]) * double(y[q * nn + j]));
        }
        const float got = out[i * nn + j];
        err = std::max(err, std::isfinite(got) ? std::abs(got - want) / scale : INFINITY);
      }
    }
    items.push_back(judge("tiled matmul 67x129x45", err, 1e-6, ms));
  }
  return items;
}

}  // namespace recon::gpu
