// Batched matrix products with a fused epilogue, and the GEMM tiling the convolutions share:
//   C[b] = act(alpha·op(A[b])·op(B[b]) + beta·C[b] + bias) + R[b]
// op() optionally transposes; bias is per output column (or per row, for convolutions); R is a
// residual laid out like C and added after the activation. Accumulation is always fp32; storage
// is f32 or f16 (all operands of one call share the dtype).
//
// Two paths, one interface (vulkan-anchors §9.1):
//  - scalar: register-tiled shared-memory GEMM (shaders/gemm_scalar.glsl) that every device runs;
//    tiles 128×128/8×8, 64×64/4×4, 16×128/1×8 or 128×16/8×1 per workgroup (BK 16) by shape;
//  - tensor cores: VK_NV_cooperative_matrix (shaders/gemm_coopmat.glsl), fp16 storage, and fp32
//    storage where the caller asks (GemmPath) split into two fp16 parts per operand, three MMAs per
//    product (gemm_io.glsl, "3xFP16"; values must lie within fp16's range). fp16 tiles: 128×128
//    (8 subgroups of 64×32) or 64×64 workgroup tiles, BK 32 with two slices of loads in flight
//    (row-major B over ≥ 512 tiles: BK 16, one; conv2d, and row-major B at K ≤ 768: BK 16, two),
//    16×16×16 fragments, split-K for small grids and ragged last waves (GemmSplitK), chosen when
//    caps allow (GemmPath::kAuto). Measured on H200 (MatmulBenchTest, RECON_GEMM_BENCH=1): 4096³
//    155 TFLOP/s with B row-major, 145–149 with B transposed (nn.Linear layout); ViT-L fc1/fc2 at
//    1536 tokens 122–126/111; scalar 4096³ 28 (f32), 24 (f16). The fp16-output activations are
//    within one fp16 ulp (gemm_activation_fp16_out).
//
// Operands larger than maxStorageBufferRange (lavapipe: 128 MiB; the 6400×7168 fp32 MLP weight is
// 175 MiB) are split: the op plans chunks over the batch, then rows of C (M), then columns of C
// (N), until every operand's touched element window fits, and records one dispatch per chunk
// that binds a window view (Tensor::reshape + slice_rows, aligned down to
// minStorageBufferOffsetAlignment) with the remaining offset in the push constants. A weight in
// nn.Linear layout ([N,K], transpose_b) thus splits over its rows. Slots cannot be windowed: an
// oversized operand must be a tensor. A transposed-A or non-transposed-B operand too large for
// one binding cannot be split (each of its column windows spans nearly all of it) and is refused.
//
// Tolerances (tests/gpu/ops/matmul_test.cpp): |got − ref| ≤ tol·(Σ_k|a·b|·|alpha| + |beta·c| +
// |bias| + |r| + 1e-6), tol = 1e-5 for f32 storage, 2e-3 for f16 storage (the final f16 rounding,
// ≤ 4.9e-4 relative, dominates). The activations add at most ~1e-6 relative (gemm_epilogue.glsl).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/ops/rope2d.h"

namespace recon::gpu::ops {

// Fused activation, applied after bias and before the residual. Values are the shader codes.
enum class Activation : uint8_t {
  kNone = 0,
  kRelu = 1,
  kGeluErf = 2,   // nn.GELU(): 0.5·x·(1 + erf(x/√2)), erf accurate to ~2e-7 relative
  kGeluTanh = 3,  // nn.GELU(approximate='tanh')
  kSigmoid = 4,
  kTanh = 5,
};
const char* activation_name(Activation a);

// Which GEMM implementation to use. kAuto takes tensor cores where the device has them for fp16
// storage and the scalar path for fp32. kAutoSplitF32 also runs fp32 storage on tensor cores where
// they exist, each operand split into two fp16 parts (shaders/gemm_io.glsl): 1.5–2.2× faster than
// the scalar path on the MASt3R shapes, with each K slice's sum rounded into the total (the tensor
// cores' own accumulation truncates): MASt3R's fp32 forward 2.2e-5 from a float64 run, the scalar
// path 1.5e-5 (H200: docs/PERFORMANCE.md, "MASt3R, full size"). kAutoSplitF32Coarse is the same
// split with the whole sum left to the tensor cores (~1e-4 relative over K in the thousands, 4 %
// faster in MASt3R's fp16 mode), for fp32 layers of a computation whose error is fp16's anyway.
// kCoopMat forces tensor cores (fp32 split, rounded) and fails with UNIMPLEMENTED where they are
// absent; kScalar always works.
enum class GemmPath : uint8_t { kAuto, kAutoSplitF32, kAutoSplitF32Coarse, kScalar, kCoopMat };

// Whether `path` runs fp32 storage split on tensor cores where the device has them.
inline bool splits_f32(GemmPath path) {
  return path == GemmPath::kAutoSplitF32 || path == GemmPath::kAutoSplitF32Coarse || path == GemmPath::kCoopMat;
}

// MASt3R's 2-D RoPE (rope2d.h) applied to the output after the bias: the first `heads` head vectors
// of `head_dim` columns of every row, rows being the tokens of `grid` (C viewed as [B, h·w, N]).
// The tensor-core path rotates in its epilogue when head_dim is 64 (a rotation pair is then 16
// columns apart: two neighbouring accumulator fragments); otherwise the op records rope2d after the
// GEMM. Not combined with an activation, a residual or beta; linear layers only (matmul with one
// batch, C 3-D); convolutions refuse it.
struct RopeEpilogue {
  RopeGrid grid;
  int64_t heads = 0;
  int64_t head_dim = 0;
  float base = kRopeBase;
};

struct Epilogue {
  Activation activation = Activation::kNone;
  std::optional<Arg> residual;  // same shape and dtype as the output; may be the output itself
  // act(x + residual) instead of act(x) + residual (ResNet's ReLU after the shortcut). matmul and
  // conv2d take it; conv_transpose2d refuses it.
  bool residual_first = false;
  std::optional<RopeEpilogue> rope;
};

struct MatmulOptions {
  bool transpose_a = false;  // A stored [K,M] (per batch)
  bool transpose_b = false;  // B stored [N,K] (per batch): nn.Linear weights
  float alpha = 1.0f;
  float beta = 0.0f;        // nonzero: C is read before it is written
  std::optional<Arg> bias;  // [N], or [M] with bias_per_row
  bool bias_per_row = false;
  Epilogue epilogue;
  GemmPath path = GemmPath::kAuto;
};

// Shapes: A [M,K] or [batch,M,K] ([K,M] / [batch,K,M] when transposed); B [K,N] or [batch,K,N]
// ([N,K] / [batch,N,K]); C [M,N] or [batch,M,N]. A 2-D A or B with a 3-D C is broadcast over the
// batch. C must not overlap A or B (checked for tensors; a residual may alias C). `caps`
// (Runtime::caps()) selects the path and bounds the binding ranges.
Status matmul(Graph& g, const Capabilities& caps, const Arg& a, const Arg& b, const Arg& c,
              const MatmulOptions& options = {});

// The general form: explicit sizes, leading dimensions (elements between rows as stored),
// batch strides (0 broadcasts) and element offsets, over operands viewed as flat arrays (their
// shapes are ignored; every touched element must lie inside). A residual uses C's geometry.
struct MatmulGeometry {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int64_t offset_a = 0, offset_b = 0, offset_c = 0;
};
Status matmul_strided(Graph& g, const Capabilities& caps, const Arg& a, const Arg& b, const Arg& c,
                      const MatmulGeometry& geometry, const MatmulOptions& options = {});

// ---- Shared by the GEMM-based ops (matmul, linear, conv2d, conv_transpose2d) ----

// True when the device runs our tensor-core GEMM: VK_NV_cooperative_matrix with a subgroup-scope
// 16×16×16 f16·f16 → f32 shape, 16-bit storage and a known subgroup size.
bool coopmat_gemm_available(const Capabilities& caps);

// Workgroup tile geometry of one GEMM dispatch: the specialisation constants 0..5 of
// gemm_scalar.glsl (WG_SIZE, BM, BN, BK, TM, TN) or gemm_coopmat.glsl (WG_SIZE, BM, BN, BK, WM, WN),
// and the tensor-core path's K split (constant 6, set by GemmSplitK::plan) and load depth (7).
struct GemmTiling {
  bool coopmat = false;
  bool split = false;  // tensor cores with fp32 operands split into fp16 parts (gemm_io.glsl)
  uint32_t wg_size = 0, bm = 0, bn = 0, bk = 0, t0 = 0, t1 = 0;
  uint32_t splits = 1;
  uint32_t prefetch = 1;     // tensor-core path: slices of global loads in flight (constant 7)
  bool round_slices = true;  // split path: each K slice's sum rounded into the total (its constant 7)
  // Scalar path: the operands that move 4 elements at a time (constant 7: kGemmVecA | kGemmVecB |
  // kGemmVecC), which the op sets where the includer and the operands' alignment allow.
  uint32_t vec = 0;
  // Grid for an M×N problem over `batch` images: x = M tiles, y = N tiles, z = batch·splits. M runs
  // fastest so that the workgroups in flight share panels of B (the weights of linear layers).
  std::array<uint32_t, 3> groups(int64_t m, int64_t n, int64_t batch) const;
  // Spec constants 0..7; the op appends its own from 8.
  std::array<uint32_t, 8> spec() const {
    const uint32_t seventh = !coopmat ? vec : split ? (round_slices ? 1u : 0u) : prefetch;
    return {wg_size, bm, bn, bk, t0, t1, splits, seventh};
  }
  // Whether an M×N×K problem is made of whole tiles: with 16-byte loads, the tensor-core loads then
  // skip their bounds checks (ALIGNED in matmul_coopmat.comp and conv2d_coopmat.comp).
  bool whole_tiles(int64_t m, int64_t n, int64_t k) const { return m % bm == 0 && n % bn == 0 && k % bk == 0; }
  // Elements in one vector access of the core: a tensor-core load word (8), a scalar-core run (4).
  int64_t vector_width() const { return coopmat ? 8 : 4; }
};

// Split-K (shaders/gemm_split_k.glsl; the tensor-core tiles, and the scalar ones on a GPU): a problem
// whose tiles cannot fill the device but whose K is long is split over several workgroups per
// tile, which store fp32 partial tiles; the last to arrive at a tile sums them in share order and
// runs the epilogue. The DPT head's convolutions at 1/16 and 1/32 resolution (12 tiles, K = 6912)
// are the case it is for.
struct GemmSplitK {
  // Sets tiling.splits (1 where splitting does not pay) and, when it splits, takes the partial
  // tiles and the per-tile arrival counters from the graph's scratch (Graph::scratch), for the one
  // dispatch of an M×N×K problem over `batch` images that binds them.
  static Result<GemmSplitK> plan(Graph& g, const Capabilities& caps, GemmTiling& tiling, int64_t m, int64_t n,
                                 int64_t k, int64_t batch);
  // Bindings 5 and 6 of the GEMM shaders: the workspace, or `dummy` (read only) without a split.
  Binding partials(const Arg& dummy) const;
  Binding arrivals(const Arg& dummy) const;

 private:
  std::optional<Arg> partials_, arrivals_;
};

// The K split that finishes a grid of `tiles` workgroups of `slices` K slices each soonest when
// `resident` of them run at once (one 128×128 tile per SM): whole waves of shares, each share
// paying for its partial tile. 1 where no split beats the grid as it is.
int64_t wave_balanced_splits(int64_t tiles, int64_t slices, int64_t resident);

// Picks the path and tile for `batch` M×N×K problems of `dtype` storage in one grid; `b_row_major`
// says B is stored [K, N] (not transposed), which the tensor-core tiles treat differently. Fails for
// dtypes other than f32/f16, and with UNIMPLEMENTED for kCoopMat where coopmat_gemm_available() is
// false.
Result<GemmTiling> choose_gemm_tiling(const Capabilities& caps, DType dtype, int64_t m, int64_t n, int64_t k,
                                      GemmPath path, bool b_row_major = false, int64_t batch = 1);

// A binding for elements [start, start + count) of `arg` viewed as a flat array: `arg` itself
// when it fits one descriptor range (offset = start), else a window view of the tensor aligned down
// to minStorageBufferOffsetAlignment, with `offset` the start inside it. Oversized slots fail.
struct GemmWindow {
  Arg arg;
  int64_t offset;
};
Result<GemmWindow> gemm_window(const Capabilities& caps, const Arg& arg, int64_t start, int64_t count);

// True when two tensor operands share bytes of one buffer (slots are never known to overlap).
bool operands_overlap(const Arg& x, const Arg& y);

// Bits of GemmTiling::vec (mirrored in shaders/gemm_scalar.glsl).
inline constexpr uint32_t kGemmVecA = 1, kGemmVecB = 2, kGemmVecC = 4;

// Epilogue flag word of the GEMM shaders (bits mirrored in shaders/gemm_epilogue.glsl).
inline constexpr uint32_t kGemmFlagBias = 0x10, kGemmFlagBiasPerRow = 0x20, kGemmFlagResidual = 0x40,
                          kGemmFlagBeta = 0x80, kGemmFlagInputRelu = 0x100, kGemmFlagResidualFirst = 0x800;

}  // namespace recon::gpu::ops
