// Fused attention against a float64 CPU reference of softmax(q·kᵀ·scale)·v (with MASt3R's 2-D RoPE
// applied to q and k where the case asks for it), on the scalar path (every device) and the NV
// cooperative-matrix path (skipped where the device lacks it): packed-qkv self-attention, cross-
// attention between different grids, several head counts and dims, odd token counts that span
// several key tiles, huge logits, and misuse.
//
// RECON_ATTN_BENCH=1 also runs a timing case at MASt3R's encoder shape (2 images × 16 heads,
// N = 768, D = 64) and prints TFLOP/s per path.
#include "gpu/ops/attention.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

// Heads of a stored [B, N, C] tensor as float64 [B][N][H][D].
std::vector<double> gather_heads(const std::vector<float>& x, int64_t batch, int64_t tokens, int64_t cols,
                                 int64_t col_offset, int64_t heads, int64_t d) {
  std::vector<double> out(batch * tokens * heads * d);
  for (int64_t r = 0; r < batch * tokens; ++r) {
    for (int64_t i = 0; i < heads * d; ++i) out[r * heads * d + i] = x[r * cols + col_offset + i];
  }
  return out;
}

// Spec §3.2 in float64 on [B][N][H][D]; with `round_f16`, the result is rounded to fp16 as the GPU
// stores its in-place rotation.
void apply_rope(std::vector<double>& t, int64_t batch, int64_t tokens, int64_t heads, int64_t d,
                const ops::RopeGrid& grid, bool round_f16) {
  const int64_t q = d / 4;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t n = 0; n < tokens; ++n) {
      const double pos[2] = {double(n / grid.w), double(n % grid.w)};
      for (int64_t h = 0; h < heads; ++h) {
        double* u0 = &t[((b * tokens + n) * heads + h) * d];
        for (int half = 0; half < 2; ++half) {
          double* u = u0 + half * 2 * q;
          for (int64_t j = 0; j < q; ++j) {
            const double theta = pos[half] * std::pow(100.0, -double(j) / double(q));
            const double a = u[j], bb = u[j + q];
            u[j] = a * std::cos(theta) - bb * std::sin(theta);
            u[j + q] = bb * std::cos(theta) + a * std::sin(theta);
          }
        }
        if (round_f16) {
          for (int64_t i = 0; i < d; ++i) u0[i] = f16_to_f32(f32_to_f16(static_cast<float>(u0[i])));
        }
      }
    }
  }
}

// out [B][Nq][H·D] = softmax(q·kᵀ·scale)·v, all float64.
std::vector<double> reference_attention(const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v, int64_t batch, int64_t nq, int64_t nk,
                                        int64_t heads, int64_t d, double scale) {
  std::vector<double> out(batch * nq * heads * d, 0.0), s(nk);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < nq; ++i) {
        const double* qi = &q[((b * nq + i) * heads + h) * d];
        double m = -INFINITY;
        for (int64_t j = 0; j < nk; ++j) {
          const double* kj = &k[((b * nk + j) * heads + h) * d];
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += qi[e] * kj[e];
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < nk; ++j) sum += (s[j] = std::exp(s[j] - m));
        double* o = &out[((b * nq + i) * heads + h) * d];
        for (int64_t j = 0; j < nk; ++j) {
          const double* vj = &v[((b * nk + j) * heads + h) * d];
          for (int64_t e = 0; e < d; ++e) o[e] += s[j] / sum * vj[e];
        }
      }
    }
  }
  return out;
}

// max |got − want| / max |v|: attention outputs are convex combinations of v rows.
double attention_error(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& v) {
  double vmax = 1e-30, worst = 0;
  for (double x : v) vmax = std::max(vmax, std::abs(x));
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::abs(got[i] - want[i]));
  }
  return worst / vmax;
}

struct Variant {
  DType dtype;
  ops::AttentionPath path;
};

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  return std::string(dtype_name(info.param.dtype)) + "_" + ops::attention_path_name(info.param.path);
}

class AttentionTest : public GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (GetParam().path != ops::AttentionPath::kScalar && !rt().caps().nv_cooperative_matrix) {
      GTEST_SKIP() << "device " << rt().caps().device_name << " has no VK_NV_cooperative_matrix";
    }
    if (GetParam().path == ops::AttentionPath::kCoopMatRows && !rt().caps().coopmat_acc_layout.two_rows_per_lane()) {
      GTEST_SKIP() << "the probed accumulator layout is not two rows per lane";
    }
  }
  DType dtype() const { return GetParam().dtype; }
  double tolerance() const { return dtype() == DType::kF32 ? 2e-5 : 3e-3; }
  ops::AttentionConfig config(int64_t heads, int64_t d, float scale = 0.0f) const {
    return {heads, d, scale, GetParam().path};
  }
};

TEST_P(AttentionTest, SelfAttentionOnPackedQkvWithRopeMatchesFloat64) {
  struct Case {
    int64_t batch, gh, gw, heads, d;
  };
  uint32_t seed = 1000;
  // Token counts 15, 35, 54, 77, 130 against key tiles of 16..64; head dims 8..128.
  for (const Case& c : {Case{2, 3, 5, 2, 16}, Case{1, 5, 7, 3, 32}, Case{2, 6, 9, 1, 64}, Case{1, 7, 11, 2, 48},
                        Case{1, 10, 13, 1, 128}, Case{2, 5, 7, 4, 8}}) {
    if (GetParam().path != ops::AttentionPath::kScalar && c.d % 16 != 0) continue;
    const int64_t n = c.gh * c.gw, width = c.heads * c.d;
    // q, k in [−2, 2] give peaky (not uniform) attention at D ≥ 16.
    Tensor qkv =
        upload_f32(rt(), dtype(), {c.batch, n, 3 * width}, random_floats(c.batch * n * 3 * width, ++seed, -2, 2));
    Tensor out = poisoned(rt(), dtype(), {c.batch, n, width});
    const auto stored = download_f32(rt(), qkv);
    Graph g(rt());
    Status s = ops::self_attention_rope(g, rt().caps(), qkv, out, {c.gh, c.gw}, config(c.heads, c.d));
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(g.run().is_ok());

    auto q = gather_heads(stored, c.batch, n, 3 * width, 0, c.heads, c.d);
    auto k = gather_heads(stored, c.batch, n, 3 * width, width, c.heads, c.d);
    auto v = gather_heads(stored, c.batch, n, 3 * width, 2 * width, c.heads, c.d);
    apply_rope(q, c.batch, n, c.heads, c.d, {c.gh, c.gw}, dtype() == DType::kF16);
    apply_rope(k, c.batch, n, c.heads, c.d, {c.gh, c.gw}, dtype() == DType::kF16);
    auto want = reference_attention(q, k, v, c.batch, n, n, c.heads, c.d, 1.0 / std::sqrt(double(c.d)));
    EXPECT_LE(attention_error(download_f32(rt(), out), want, v), tolerance())
        << "B=" << c.batch << " N=" << n << " H=" << c.heads << " D=" << c.d;
  }
}

TEST_P(AttentionTest, CrossAttentionBetweenDifferentGridsWithRopeMatchesFloat64) {
  struct Case {
    int64_t batch;
    ops::RopeGrid qg, kg;
    int64_t heads, d;
  };
  uint32_t seed = 2000;
  // The brief's 4x6 grid attending to a 5x3 grid, then longer and shorter key sets.
  for (const Case& c : {Case{2, {4, 6}, {5, 3}, 2, 16}, Case{1, {5, 7}, {9, 8}, 3, 32}, Case{2, {3, 3}, {11, 7}, 1, 64},
                        Case{1, {9, 9}, {2, 5}, 2, 16}}) {
    const int64_t nq = c.qg.h * c.qg.w, nk = c.kg.h * c.kg.w, width = c.heads * c.d;
    Tensor tq = upload_f32(rt(), dtype(), {c.batch, nq, width}, random_floats(c.batch * nq * width, ++seed, -2, 2));
    Tensor tk = upload_f32(rt(), dtype(), {c.batch, nk, width}, random_floats(c.batch * nk * width, ++seed, -2, 2));
    Tensor tv = upload_f32(rt(), dtype(), {c.batch, nk, width}, random_floats(c.batch * nk * width, ++seed, -1, 1));
    Tensor out = poisoned(rt(), dtype(), {c.batch, nq, width});
    auto q = gather_heads(download_f32(rt(), tq), c.batch, nq, width, 0, c.heads, c.d);
    auto k = gather_heads(download_f32(rt(), tk), c.batch, nk, width, 0, c.heads, c.d);
    auto v = gather_heads(download_f32(rt(), tv), c.batch, nk, width, 0, c.heads, c.d);
    Graph g(rt());
    Status s = ops::cross_attention_rope(g, rt().caps(), tq, tk, tv, out, c.qg, c.kg, config(c.heads, c.d, 0.2f));
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(g.run().is_ok());
    apply_rope(q, c.batch, nq, c.heads, c.d, c.qg, dtype() == DType::kF16);
    apply_rope(k, c.batch, nk, c.heads, c.d, c.kg, dtype() == DType::kF16);
    auto want = reference_attention(q, k, v, c.batch, nq, nk, c.heads, c.d, 0.2);
    EXPECT_LE(attention_error(download_f32(rt(), out), want, v), tolerance())
        << "Nq=" << nq << " Nk=" << nk << " H=" << c.heads << " D=" << c.d;
  }
}

TEST_P(AttentionTest, ReadsHeadsAtColumnOffsetsOfWiderRows) {
  // q, k, v at different offsets inside rows wider than H·D, no RoPE; v gets its own tensor.
  const int64_t batch = 2, nq = 37, nk = 70, heads = 2, d = 32, width = heads * d;
  const int64_t cq = width + 24, cv = width + 8;
  Tensor qk = upload_f32(rt(), dtype(), {batch, nq, cq}, random_floats(batch * nq * cq, 31, -2, 2));
  Tensor kt = upload_f32(rt(), dtype(), {batch, nk, cq}, random_floats(batch * nk * cq, 32, -2, 2));
  Tensor vt = upload_f32(rt(), dtype(), {batch, nk, cv}, random_floats(batch * nk * cv, 33, -1, 1));
  Tensor out = poisoned(rt(), dtype(), {batch, nq, width});
  Graph g(rt());
  Status s = ops::attention(g, rt().caps(), {qk, 16}, {kt, 8}, {vt, 8}, out, config(heads, d));
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_TRUE(g.run().is_ok());
  auto q = gather_heads(download_f32(rt(), qk), batch, nq, cq, 16, heads, d);
  auto k = gather_heads(download_f32(rt(), kt), batch, nk, cq, 8, heads, d);
  auto v = gather_heads(download_f32(rt(), vt), batch, nk, cv, 8, heads, d);
  auto want = reference_attention(q, k, v, batch, nq, nk, heads, d, 1.0 / std::sqrt(double(d)));
  EXPECT_LE(attention_error(download_f32(rt(), out), want, v), tolerance());
}

// Grids of many waves take the wide rows tile (two 16-row blocks per subgroup, 64 keys per tile,
// ops::attention): claiming a single SM makes these small grids many waves. Ragged query blocks and
// key tiles, head dims 16..64.
TEST_P(AttentionTest, WideRowsTileOfManyWaveGridsMatchesFloat64) {
  if (GetParam().path != ops::AttentionPath::kCoopMatRows) GTEST_SKIP() << "a tile of the coopmat_rows path";
  Capabilities caps = rt().caps();
  caps.shader_core_count = 1;
  struct Case {
    int64_t batch, nq, nk, heads, d;
  };
  uint32_t seed = 3000;
  for (const Case& c : {Case{2, 150, 203, 4, 64}, Case{4, 81, 64, 2, 32}, Case{1, 256, 129, 8, 16}}) {
    const int64_t width = c.heads * c.d;
    Tensor tq = upload_f32(rt(), dtype(), {c.batch, c.nq, width}, random_floats(c.batch * c.nq * width, ++seed, -2, 2));
    Tensor tk = upload_f32(rt(), dtype(), {c.batch, c.nk, width}, random_floats(c.batch * c.nk * width, ++seed, -2, 2));
    Tensor tv = upload_f32(rt(), dtype(), {c.batch, c.nk, width}, random_floats(c.batch * c.nk * width, ++seed, -1, 1));
    Tensor out = poisoned(rt(), dtype(), {c.batch, c.nq, width});
    Graph g(rt());
    Status s = ops::attention(g, caps, {tq, 0}, {tk, 0}, {tv, 0}, out, config(c.heads, c.d));
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(g.run().is_ok());
    auto q = gather_heads(download_f32(rt(), tq), c.batch, c.nq, width, 0, c.heads, c.d);
    auto k = gather_heads(download_f32(rt(), tk), c.batch, c.nk, width, 0, c.heads, c.d);
    auto v = gather_heads(download_f32(rt(), tv), c.batch, c.nk, width, 0, c.heads, c.d);
    auto want = reference_attention(q, k, v, c.batch, c.nq, c.nk, c.heads, c.d, 1.0 / std::sqrt(double(c.d)));
    EXPECT_LE(attention_error(download_f32(rt(), out), want, v), tolerance())
        << "B=" << c.batch << " Nq=" << c.nq << " Nk=" << c.nk << " H=" << c.heads << " D=" << c.d;
  }
}

TEST_P(AttentionTest, StaysFiniteAndExactOnHugeLogits) {
  // Logits of several hundred overflow exp() unless the running max is subtracted. In the second
  // case the keys of the last tiles are 8x longer, so the row max jumps late (online rescaling).
  for (int64_t nk : {int64_t{45}, int64_t{150}}) {
    const int64_t batch = 1, nq = 20, heads = 2, d = 16, width = heads * d;
    std::vector<float> qv = random_floats(batch * nq * width, 41, -1, 1);
    for (float& x : qv) x *= 60.0f;
    std::vector<float> kv = random_floats(batch * nk * width, 42, -1, 1);
    if (nk > 100) {
      for (int64_t i = 100 * width; i < nk * width; ++i) kv[i] *= 8.0f;
    }
    Tensor tq = upload_f32(rt(), dtype(), {batch, nq, width}, qv);
    Tensor tk = upload_f32(rt(), dtype(), {batch, nk, width}, kv);
    Tensor tv = upload_f32(rt(), dtype(), {batch, nk, width}, random_floats(batch * nk * width, 43, -1, 1));
    Tensor out = poisoned(rt(), dtype(), {batch, nq, width});
    Graph g(rt());
    ASSERT_TRUE(ops::attention(g, rt().caps(), {tq, 0}, {tk, 0}, {tv, 0}, out, config(heads, d, 1.0f)).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    auto q = gather_heads(download_f32(rt(), tq), batch, nq, width, 0, heads, d);
    auto k = gather_heads(download_f32(rt(), tk), batch, nk, width, 0, heads, d);
    auto v = gather_heads(download_f32(rt(), tv), batch, nk, width, 0, heads, d);
    auto want = reference_attention(q, k, v, batch, nq, nk, heads, d, 1.0);
    // fp32 scores of several hundred carry ~1e-4 absolute error, which moves the probabilities by as much.
    EXPECT_LE(attention_error(download_f32(rt(), out), want, v), dtype() == DType::kF32 ? 3e-4 : 3e-3) << "Nk=" << nk;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, AttentionTest,
                         ::testing::Values(Variant{DType::kF32, ops::AttentionPath::kScalar},
                                           Variant{DType::kF16, ops::AttentionPath::kScalar},
                                           Variant{DType::kF16, ops::AttentionPath::kCoopMat},
                                           Variant{DType::kF16, ops::AttentionPath::kCoopMatRows}),
                         variant_name);

class AttentionMisuseTest : public GpuTest {};

TEST_F(AttentionMisuseTest, RefusesBadShapesDtypesHeadDimsAndColumns) {
  const Capabilities& caps = rt().caps();
  Tensor qkv = Tensor::empty(rt(), DType::kF32, {2, 6, 96}).value();  // H = 2, D = 16
  Tensor out = Tensor::empty(rt(), DType::kF32, {2, 6, 32}).value();
  Tensor out_bad = Tensor::empty(rt(), DType::kF32, {2, 5, 32}).value();
  Tensor out_h = Tensor::empty(rt(), DType::kF16, {2, 6, 32}).value();
  Tensor k3 = Tensor::empty(rt(), DType::kF32, {3, 6, 32}).value();
  Tensor v7 = Tensor::empty(rt(), DType::kF32, {2, 7, 32}).value();
  Tensor flat = Tensor::empty(rt(), DType::kF32, {12, 96}).value();
  Graph g(rt());
  const ops::AttentionConfig cfg{2, 16};
  const auto code = [](Status s) { return s.code(); };
  EXPECT_EQ(code(ops::attention(g, caps, {qkv, 0}, {qkv, 32}, {qkv, 64}, out_bad, cfg)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::attention(g, caps, {qkv, 0}, {qkv, 32}, {qkv, 64}, out_h, cfg)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::attention(g, caps, {qkv, 0}, {qkv, 32}, {qkv, 72}, out, cfg)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::attention(g, caps, {qkv, -1}, {qkv, 32}, {qkv, 64}, out, cfg)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::attention(g, caps, {qkv, 0}, {k3, 0}, {k3, 0}, out, cfg)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::attention(g, caps, {qkv, 0}, {qkv, 32}, {v7, 0}, out, cfg)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::attention(g, caps, {flat, 0}, {flat, 32}, {flat, 64}, out, cfg)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::attention(g, caps, {qkv, 0}, {qkv, 32}, {qkv, 64}, out, {2, 14})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::attention(g, caps, {qkv, 0}, {qkv, 32}, {qkv, 64}, out, {0, 16})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::attention(g, caps, {qkv, 0}, {qkv, 32}, {qkv, 64}, out, {2, 16, -1.0f})),
            StatusCode::kInvalidArgument);
  // RoPE helpers: wrong packed width, grids that do not hold the tokens.
  EXPECT_EQ(code(ops::self_attention_rope(g, caps, qkv, out, {2, 3}, {1, 16})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::self_attention_rope(g, caps, qkv, out, {2, 2}, cfg)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::cross_attention_rope(g, caps, out, out, out, out, {2, 3}, {3, 3}, cfg)),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

TEST_F(AttentionMisuseTest, ForcedCoopMatPathIsUnimplementedWhereItDoesNotApply) {
  const Capabilities& caps = rt().caps();
  Tensor qkv = Tensor::empty(rt(), DType::kF32, {1, 6, 96}).value();  // fp32: never the coopmat path
  Tensor out = Tensor::empty(rt(), DType::kF32, {1, 6, 32}).value();
  Graph g(rt());
  for (ops::AttentionPath path : {ops::AttentionPath::kCoopMat, ops::AttentionPath::kCoopMatRows}) {
    const ops::AttentionConfig cfg{2, 16, 0.0f, path};
    EXPECT_EQ(ops::choose_attention_path(caps, {qkv, 0}, {qkv, 32}, {qkv, 64}, cfg), ops::AttentionPath::kScalar);
    EXPECT_FALSE(ops::attention_path_applies(caps, {qkv, 0}, {qkv, 32}, {qkv, 64}, cfg, path));
    EXPECT_EQ(ops::attention(g, caps, {qkv, 0}, {qkv, 32}, {qkv, 64}, out, cfg).code(), StatusCode::kUnimplemented);
    EXPECT_EQ(ops::self_attention_rope(g, caps, qkv, out, {2, 3}, cfg).code(), StatusCode::kUnimplemented);
  }
  EXPECT_EQ(g.dispatch_count(), 0u);
}

// ---- Timing at MASt3R's encoder shape (opt-in) ----

class AttentionBench : public GpuTest {};

TEST_F(AttentionBench, Mast3rEncoderShapeThroughput) {
  if (std::getenv("RECON_ATTN_BENCH") == nullptr) GTEST_SKIP() << "set RECON_ATTN_BENCH=1 to run";
  const int64_t batch = 2, n = 768, heads = 16, d = 64, width = heads * d;
  const double flop = 4.0 * batch * heads * double(n) * n * d;
  for (Variant var :
       {Variant{DType::kF16, ops::AttentionPath::kCoopMatRows}, Variant{DType::kF16, ops::AttentionPath::kCoopMat},
        Variant{DType::kF16, ops::AttentionPath::kScalar}, Variant{DType::kF32, ops::AttentionPath::kScalar}}) {
    if (var.path == ops::AttentionPath::kCoopMat && !rt().caps().nv_cooperative_matrix) continue;
    if (var.path == ops::AttentionPath::kCoopMatRows && !rt().caps().coopmat_acc_layout.two_rows_per_lane()) continue;
    Tensor qkv = upload_f32(rt(), var.dtype, {batch, n, 3 * width}, random_floats(batch * n * 3 * width, 7, -2, 2));
    Tensor out = poisoned(rt(), var.dtype, {batch, n, width});
    const ops::AttentionConfig cfg{heads, d, 0.125f, var.path};
    constexpr int kReps = 20;
    Graph g(rt());
    for (int i = 0; i < kReps; ++i) {
      ASSERT_TRUE(ops::attention(g, rt().caps(), {qkv, 0}, {qkv, width}, {qkv, 2 * width}, out, cfg).is_ok());
    }
    const double best = seconds_per_dispatch(g, kReps, 2);
    // Correctness on two heads of image 1 against float64.
    const auto stored = download_f32(rt(), qkv);
    const auto got = download_f32(rt(), out);
    auto q = gather_heads(stored, batch, n, 3 * width, 0, heads, d);
    auto k = gather_heads(stored, batch, n, 3 * width, width, heads, d);
    auto v = gather_heads(stored, batch, n, 3 * width, 2 * width, heads, d);
    double worst = 0, vmax = 0;
    for (double x : v) vmax = std::max(vmax, std::abs(x));
    for (int64_t h : {int64_t{0}, int64_t{11}}) {
      std::vector<double> qh(n * d), kh(n * d), vh(n * d);
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t e = 0; e < d; ++e) {
          qh[t * d + e] = q[((n + t) * heads + h) * d + e];
          kh[t * d + e] = k[((n + t) * heads + h) * d + e];
          vh[t * d + e] = v[((n + t) * heads + h) * d + e];
        }
      }
      auto want = reference_attention(qh, kh, vh, 1, n, n, 1, d, 0.125);
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t e = 0; e < d; ++e) {
          worst = std::max(worst, std::abs(got[((n + t) * heads + h) * d + e] - want[t * d + e]));
        }
      }
    }
    std::printf("[bench] attention %s/%s B=%lld H=%lld N=%lld D=%lld: %.1f us, %.1f TFLOP/s, max err/|v| %.2e\n",
                dtype_name(var.dtype), ops::attention_path_name(var.path), (long long)batch, (long long)heads,
                (long long)n, (long long)d, best * 1e6, flop / best * 1e-12, worst / vmax);
    EXPECT_LE(worst / vmax, var.dtype == DType::kF32 ? 2e-5 : 3e-3);

    // The RoPE pre-pass over q and k of the same tensor, for scale.
    Graph rg(rt());
    for (int i = 0; i < kReps; ++i) ASSERT_TRUE(ops::rope2d(rg, qkv, 0, 2 * heads, d, {24, 32}).is_ok());
    const double rope_best = seconds_per_dispatch(rg, kReps);
    std::printf("[bench] rope2d %s on q,k of [2, 768, 3072]: %.1f us\n", dtype_name(var.dtype), rope_best * 1e6);
  }
}

// The tensor-core kernels' tile shapes, dispatched directly (the push struct mirrors
// shaders/attention_cm.comp and attention_cm_rows.comp), at the encoder's shape and at the
// decoder's, whose two views run side by side (two independent dispatches per repetition, as the
// decoder records them).
struct CmPush {
  uint32_t nq, nk, q_stride, q_col, k_stride, k_col, v_stride, v_col, o_stride;
  float scale_log2e;
};

TEST_F(AttentionBench, CoopMatTileSweep) {
  if (std::getenv("RECON_ATTN_BENCH") == nullptr) GTEST_SKIP() << "set RECON_ATTN_BENCH=1 to run";
  if (!rt().caps().nv_cooperative_matrix) GTEST_SKIP() << "no tensor cores";
  const Capabilities& caps = rt().caps();
  const uint32_t sg = caps.subgroup_size, d = 64;
  // One kernel configuration: shader, specialisation constants, query rows per workgroup.
  struct Kernel {
    std::string label, shader;
    std::vector<uint32_t> spec;
    uint32_t rows;
  };
  std::vector<Kernel> kernels;
  struct RowsTile {
    uint32_t warps, bc, rpw;
  };
  if (caps.coopmat_acc_layout.two_rows_per_lane()) {
    for (const RowsTile& t : {RowsTile{4, 64, 1}, RowsTile{4, 64, 2}, RowsTile{2, 64, 1}, RowsTile{2, 64, 2},
                              RowsTile{8, 64, 1}, RowsTile{4, 32, 1}, RowsTile{2, 32, 1}, RowsTile{2, 32, 2},
                              RowsTile{4, 128, 1}, RowsTile{4, 128, 2}, RowsTile{8, 128, 1}}) {
      if (16 * t.rpw * t.warps > 2 * t.bc) continue;
      char label[64];
      std::snprintf(label, sizeof(label), "rows warps %u bc %3u rpw %u", t.warps, t.bc, t.rpw);
      kernels.push_back({label,
                         "attention_cm_rows_f16",
                         {d, t.warps, t.bc, t.warps * sg, t.rpw, caps.coopmat_acc_layout.slot_mask,
                          caps.coopmat_acc_layout.row_lanes},
                         16 * t.rpw * t.warps});
    }
  }
  struct SharedTile {
    uint32_t warps, bc, ksplit;
  };
  for (const SharedTile& t : {SharedTile{8, 64, 2}, SharedTile{4, 64, 1}, SharedTile{2, 32, 1}}) {
    const uint32_t bcw = t.bc / t.ksplit, rows = 16 * t.warps / t.ksplit;
    if (bcw % 16 != 0 || rows > t.bc || t.warps * sg > caps.max_workgroup_invocations) continue;
    uint32_t ow = d <= bcw ? d : 16;
    for (uint32_t w = bcw - bcw % 16; d > bcw && w >= 16; w -= 16) {
      if (d % w == 0) {
        ow = w;
        break;
      }
    }
    char label[64];
    std::snprintf(label, sizeof(label), "shared warps %u bc %3u ksplit %u", t.warps, t.bc, t.ksplit);
    kernels.push_back({label, "attention_cm_f16", {d, t.warps, t.bc, sg, t.warps * sg, t.ksplit, ow}, rows});
  }

  struct Case {
    const char* what;
    int64_t batch, heads, views;
  };
  for (const Case& c :
       {Case{"encoder, 2 images x 16 heads", 2, 16, 1}, Case{"decoder, 2 views x 12 heads", 1, 12, 2},
        Case{"decoder, 1 view x 12 heads", 1, 12, 1}, Case{"decoder, batch 2 x 12 heads", 2, 12, 1},
        Case{"encoder, 16 images x 16 heads", 16, 16, 1}, Case{"decoder, 2 views x 8 x 12 heads", 8, 12, 2}}) {
    const int64_t n = 768, width = c.heads * d;
    std::vector<Tensor> qkv, out;
    for (int64_t v = 0; v < c.views; ++v) {
      qkv.push_back(upload_f32(rt(), DType::kF16, {c.batch, n, 3 * width},
                               random_floats(c.batch * n * 3 * width, 70 + uint32_t(v), -2, 2)));
      out.push_back(Tensor::empty(rt(), DType::kF16, {c.batch, n, width}).value());
    }
    for (const Kernel& kern : kernels) {
      const CmPush push{uint32_t(n),         uint32_t(n),
                        uint32_t(3 * width), 0,
                        uint32_t(3 * width), uint32_t(width),
                        uint32_t(3 * width), uint32_t(2 * width),
                        uint32_t(width),     0.125f * 1.4426950408889634f};
      constexpr int kReps = 20;
      Graph g(rt());
      bool ok = true;
      for (int i = 0; i < kReps && ok; ++i) {
        for (int64_t v = 0; v < c.views && ok; ++v) {
          ok = g.dispatch(kern.shader, kern.spec,
                          {{qkv[v], Access::kRead},
                           {qkv[v], Access::kRead},
                           {qkv[v], Access::kRead},
                           {out[v], Access::kWrite}},
                          push, {(uint32_t(n) + kern.rows - 1) / kern.rows, uint32_t(c.heads), uint32_t(c.batch)})
                   .is_ok();
        }
      }
      if (!ok) continue;                                   // shared memory beyond the device's limit
      const double best = seconds_per_dispatch(g, kReps);  // per repetition: every view's dispatch
      const double flop = 4.0 * c.views * c.batch * c.heads * double(n) * n * d;
      std::printf("[sweep] attention %-30s %-32s (%3u rows): %7.1f us  %5.1f TFLOP/s\n", c.what, kern.label.c_str(),
                  kern.rows, best * 1e6, flop / best * 1e-12);
    }
  }
}

}  // namespace
}  // namespace recon::gpu
