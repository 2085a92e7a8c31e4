// Shared helpers for GPU tests: a runtime fixture with validation on (any validation error fails
// the test), seeded random data, poisoning, and comparison against float64 CPU references.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/graph.h"
#include "gpu/runtime.h"
#include "gpu/weights/half_float.h"

namespace recon::gpu::testing {

// Names the instances of a test suite parameterised over DType by the dtype ("f32", "f16"):
//   INSTANTIATE_TEST_SUITE_P(Dtypes, T, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());
struct DtypeParamName {
  std::string operator()(const ::testing::TestParamInfo<DType>& info) const { return dtype_name(info.param); }
};

// One runtime per test process on the default device (lavapipe in CI), validation layers on when
// installed, no pipeline cache file. It is shared because NVIDIA's driver refused new instances
// after ~20 create/destroy cycles in one process (seen on an H200, driver 580.159.04); the daemon
// creates one context for its lifetime. TearDown fails the test if the validation layer reported
// an error during it.
class GpuTest : public ::testing::Test {
 protected:
  static Runtime* shared_runtime() {
    static std::unique_ptr<Runtime> rt = [] {
      RuntimeOptions options;
      options.context.validation = true;
      options.pipeline_cache_path = "none";
      auto r = Runtime::create(options);
      if (!r.is_ok()) {
        ADD_FAILURE() << r.status().to_string();
        return std::unique_ptr<Runtime>();
      }
      return std::move(r).value();
    }();
    return rt.get();
  }
  void SetUp() override {
    rt_ = shared_runtime();
    ASSERT_NE(rt_, nullptr);
    errors_at_start_ = rt_->context().validation_error_count();
  }
  void TearDown() override {
    if (!rt_) return;
    EXPECT_EQ(rt_->context().validation_error_count(), errors_at_start_)
        << "last validation error: " << rt_->context().last_validation_error();
  }
  Runtime& rt() { return *rt_; }

  Runtime* rt_ = nullptr;
  uint64_t errors_at_start_ = 0;
};

// Deterministic per-test random numbers; each call draws fresh values.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline std::vector<uint16_t> to_f16(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
  return h;
}

inline std::vector<float> from_f16(const std::vector<uint16_t>& h) {
  std::vector<float> v(h.size());
  for (size_t i = 0; i < h.size(); ++i) v[i] = f16_to_f32(h[i]);
  return v;
}

// A tensor filled with NaN (f32/f16) or 0xAB bytes so that any element the GPU fails to write
// stands out.
inline Tensor poisoned(Runtime& rt, DType dtype, const Shape& shape) {
  auto t = Tensor::empty(rt, dtype, shape);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  std::vector<uint8_t> bytes(t->bytes(), 0xAB);
  if (dtype == DType::kF32) {
    const float nan = std::nanf("");
    for (size_t i = 0; i < bytes.size() / 4; ++i) std::memcpy(&bytes[i * 4], &nan, 4);
  } else if (dtype == DType::kF16) {
    const uint16_t nan = 0x7e00;
    for (size_t i = 0; i < bytes.size() / 2; ++i) std::memcpy(&bytes[i * 2], &nan, 2);
  }
  EXPECT_TRUE(t->upload(rt, bytes.data(), bytes.size()).is_ok());
  return std::move(t).value();
}

inline std::vector<float> download_f32(Runtime& rt, const Tensor& t) {
  std::vector<float> out(t.numel());
  if (t.dtype() == DType::kF32) {
    EXPECT_TRUE(t.download(rt, out.data(), out.size() * 4).is_ok());
  } else {
    std::vector<uint16_t> h(t.numel());
    EXPECT_TRUE(t.download(rt, h.data(), h.size() * 2).is_ok());
    out = from_f16(h);
  }
  return out;
}

inline Tensor upload_f32(Runtime& rt, DType dtype, const Shape& shape, const std::vector<float>& values) {
  Result<Tensor> t =
      dtype == DType::kF32 ? Tensor::from_host(rt, dtype, shape, values.data(), values.size() * 4) : [&] {
        auto h = to_f16(values);
        return Tensor::from_host(rt, dtype, shape, h.data(), h.size() * 2);
      }();
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return std::move(t).value();
}

// max |got − want| / (|want| + floor), with NaN counted as an infinite error.
inline double max_relative_error(const std::vector<float>& got, const std::vector<double>& want, double floor = 1e-3) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::abs(got[i] - want[i]) / (std::abs(want[i]) + floor));
  }
  return worst;
}

// max |got − want| / max |want|, with NaN counted as an infinite error: for outputs whose scale
// is set by their largest values (model outputs, whitened features).
inline double max_scaled_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double scale = 1e-30, worst = 0;
  for (float w : want) scale = std::max(scale, double(std::abs(w)));
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::abs(double(got[i]) - double(want[i])));
  }
  return worst / scale;
}

// Wall-clock seconds per timed dispatch of a graph holding `dispatches` of them: the best of 5
// runs (submit and wait) after `warmups` runs, the first of which records the graph. For the
// opt-in bench tests; a timed test asserts nothing about the result.
inline double seconds_per_dispatch(Graph& g, int dispatches, int warmups = 1) {
  for (int i = 0; i < warmups; ++i) EXPECT_TRUE(g.run().is_ok());
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(g.run().is_ok());
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best / dispatches;
}

}  // namespace recon::gpu::testing
