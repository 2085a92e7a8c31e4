// The op benchmark cases: which op, at which MASt3R shape, in which dtype, how much work one
// application does, and how a replay strings applications together (the plan). The one list both
// sides use: recon_bench_ops runs it, and exports it (--recon_list_cases) for torch_ops.py, which
// runs the same ops at the same shapes with the same plan. Holds no GPU code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/tensor.h"

namespace recon::bench {

enum class OpKind {
  kLinear,     // x[m,k]·w[n,k]ᵀ + bias[n]          (nn.Linear)
  kMatmul,     // a[m,k]·b[k,n]                      (plain GEMM)
  kAttention,  // softmax(q·kᵀ·scale)·v, b×h heads  (self: packed qkv; cross: separate q, k, v)
  kConv2d,     // NCHW conv, OIHW weights, bias
  kLayerNorm,  // over the last axis, with weight and bias
  kSoftmax,    // over the last axis
  kSub,        // a − b, same shape
  kCast,       // f32 → f16 and f16 → f32, alternating
  kTranspose,  // [b, n, c] ↔ [b, c, n], alternating
  kUpsample,   // bilinear ×2, align_corners = true
};

struct OpCase {
  OpKind kind;
  std::string op;                                       // "linear", as torch_ops.py knows it
  std::string shape;                                    // the MASt3R role of the shape, e.g. "enc_qkv"
  gpu::DType dtype;                                     // storage type (kCast: the type of even ring slots, f32)
  std::vector<std::pair<std::string, int64_t>> params;  // the shape, by name

  int64_t param(std::string_view key) const;  // 0 when absent
  bool compute_bound() const;
  // Floating-point operations of one application (compute-bound cases; 2 per multiply-add).
  double flops() const;
  // Bytes one application must move at the least: every input read once, the output written once.
  double bytes() const;
  std::string dtype_label() const;  // "f32", "f16", or "f32<->f16" for kCast
  std::string name() const;         // "linear/enc_qkv/f16"
};

// Every case, at MASt3R's real shapes (512×384 pair: 768 tokens per view) or at small ones that
// keep a smoke run on lavapipe short.
std::vector<OpCase> op_cases(bool full_shapes);

// How one timed replay is put together.
//  - Memory-bound ops run as a chain over a ring of `ring` buffers: application i reads slot i and
//    writes slot i − 1, the one application i − 1 has just read. Each application thus waits for
//    the one before (no overlap, like kernels on one CUDA stream), and it reads a slot written
//    ring − 1 applications ago: with a ring several times the GPU's last-level cache, the data is
//    no longer cached and the figure is device-memory bandwidth. kSub reads slots i and
//    i + ring/2; kUpsample reads the first quarter of slot i; kCast and kTranspose alternate
//    direction (even slots f32 / [b, n, c], odd slots f16 / [b, c, n]).
//  - Compute-bound ops repeat on one set of operands (the output is rewritten each time).
struct CasePlan {
  int ring = 1;            // buffers in the ring (1: no ring)
  int ops_per_replay = 1;  // applications per timed replay, a multiple of `ring`
};
struct PlanTargets {
  uint64_t cold_bytes = 0;      // a ring spans at least this many bytes (0: the smallest ring)
  double flops_per_replay = 0;  // a compute-bound replay does at least this much work
  double bytes_per_replay = 0;  // a memory-bound replay moves at least this many bytes
};
CasePlan plan_case(const OpCase& c, const PlanTargets& targets);
// Bytes of one ring slot of a memory-bound case (kCast: the mean of its f32 and f16 slots).
uint64_t ring_slot_bytes(const OpCase& c);

}  // namespace recon::bench
