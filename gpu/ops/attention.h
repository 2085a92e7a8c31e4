// Fused multi-head scaled-dot-product attention, flash-attention style: out = softmax(q·kᵀ·scale)·v
// per (batch, head), with an online softmax in fp32; the Nq×Nk scores never reach memory. Query and
// key/value token counts may differ (cross-attention).
//
// Layout. q, k and v are read from token-major tensors [B, N, C] at a column offset: head h of a
// token occupies columns [col + h·D, col + (h+1)·D) of its row. So MASt3R's packed qkv projection
// [B, N, 3·H·D] (spec §3.3: [3][H][D] inside each row) is read in place with offsets 0, H·D, 2·H·D,
// and the cross-attention projections [B, N, H·D] with offset 0. out is [B, Nq, H·D], heads
// concatenated in head order — what the proj Linear consumes.
//
// Paths (AttentionPath::kAuto picks the first that applies):
//  - kCoopMatRows: NV cooperative matrices with the online softmax in registers
//    (shaders/attention_cm_rows.comp): what kCoopMat needs, plus the accumulator layout that
//    Runtime::create probed (Capabilities::coopmat_acc_layout: two rows per lane, at most 8
//    elements per lane). Same rounding as kCoopMat (P in fp16, O in fp32). H200, MASt3R encoder
//    shape (2 images × 16 heads, N = 768, D = 64): 35 µs, 137 TFLOP/s (bench/ops; SDPA 19 µs).
//  - kCoopMat: NV cooperative matrices, scores through shared memory, any accumulator layout
//    (VK_NV_cooperative_matrix, 16×16×16 fp16 → fp32, subgroup scope; shaders/attention_cm.comp):
//    fp16 tensors, D % 16 == 0 and D ≤ 128, subgroup size 16/32/64, row strides and column offsets
//    multiples of 8 elements, and a tile whose shared memory fits the device (48 KiB on NVIDIA).
//    P is rounded to fp16 before P·V; O accumulates in fp32. Encoder shape: 70 µs, 69 TFLOP/s on
//    an H200 (RECON_ATTN_BENCH=1 in attention_test).
//  - kScalar: every device (lavapipe in CI), f32 or f16 storage, D % 4 == 0, D ≤ 128
//    (shaders/attention.comp; ≈ 6 TFLOP/s on an H100 at the shape above).
// RoPE is not applied here: the *_rope helpers below run rope2d (rope2d.h) on q and k IN PLACE first.
//
// Large tensors: split along the batch axis (row views, layout.h) when an operand exceeds one
// binding; one batch item of each operand must fit. An oversized graph slot is refused.
//
// Tolerance (tests/gpu/ops/attention_test.cpp, against float64 on the stored inputs, error relative
// to max |v| of the head): scalar fp32 ≤ 2e-5; fp16 storage (either path) ≤ 1e-2, which covers
// the fp16 rounding of the output and, on the coopmat path, of the probabilities P.
#pragma once

#include <cstdint>

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/ops/rope2d.h"

namespace recon::gpu::ops {

enum class AttentionPath : uint8_t { kAuto, kScalar, kCoopMat, kCoopMatRows };
const char* attention_path_name(AttentionPath path);

// One attention operand: a [B, N, C] token-major tensor whose heads start at column col_offset.
struct HeadsView {
  Arg tensor;
  int64_t col_offset = 0;
};

struct AttentionConfig {
  int64_t heads = 0;
  int64_t head_dim = 0;
  float scale = 0.0f;  // 0: head_dim^-0.5 (MASt3R: 0.125 for D = 64)
  AttentionPath path = AttentionPath::kAuto;
};

// The path kAuto takes for these operands on this device (kScalar when no tensor-core path applies).
AttentionPath choose_attention_path(const Capabilities& caps, const HeadsView& q, const HeadsView& k,
                                    const HeadsView& v, const AttentionConfig& cfg);
// Whether `path` can run these operands here (kAuto and kScalar always can).
bool attention_path_applies(const Capabilities& caps, const HeadsView& q, const HeadsView& k, const HeadsView& v,
                            const AttentionConfig& cfg, AttentionPath path);

// out [B, Nq, H·D] = attention(q, k, v). q [B, Nq, Cq], k [B, Nk, Ck], v [B, Nk, Cv], one dtype (f32/f16).
// q, k and v may be the same tensor. `caps` selects the path (Runtime::caps()). A forced
// tensor-core path that does not apply is UNIMPLEMENTED.
Status attention(Graph& g, const Capabilities& caps, const HeadsView& q, const HeadsView& k, const HeadsView& v,
                 const Arg& out, const AttentionConfig& cfg);

// MASt3R self-attention on the packed qkv [B, N, 3·H·D]: rotates q and k of `qkv` IN PLACE with 2-D
// RoPE on `grid` (one rope2d dispatch), then attention into out [B, N, H·D].
Status self_attention_rope(Graph& g, const Capabilities& caps, const Arg& qkv, const Arg& out, const RopeGrid& grid,
                           const AttentionConfig& cfg);

// MASt3R cross-attention: q [B, Nq, H·D] on q_grid, k and v [B, Nk, H·D] with k on k_grid. Rotates q
// and k IN PLACE (two rope2d dispatches; q and k must be different tensors), then attention into
// out [B, Nq, H·D].
Status cross_attention_rope(Graph& g, const Capabilities& caps, const Arg& q, const Arg& k, const Arg& v,
                            const Arg& out, const RopeGrid& q_grid, const RopeGrid& k_grid, const AttentionConfig& cfg);

}  // namespace recon::gpu::ops
