#include "bench/ops/op_graph.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gpu/ops/attention.h"
#include "gpu/ops/cast.h"
#include "gpu/ops/conv2d.h"
#include "gpu/ops/elementwise.h"
#include "gpu/ops/layer_norm.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/linear.h"
#include "gpu/ops/matmul.h"
#include "gpu/ops/softmax.h"
#include "gpu/ops/upsample.h"
#include "gpu/weights/half_float.h"

namespace recon::bench {
namespace {

using gpu::Arg;
using gpu::DType;
using gpu::Shape;
using gpu::Tensor;

// Uniform values in [-1, 1) as `dtype` storage: no denormals, which would slow a CPU driver.
std::vector<uint8_t> random_bytes(DType dtype, size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint8_t> bytes(n * gpu::dtype_size(dtype));
  if (dtype == DType::kF16) {
    auto* h = reinterpret_cast<uint16_t*>(bytes.data());
    for (size_t i = 0; i < n; ++i) h[i] = gpu::f32_to_f16(dist(gen));
  } else {
    auto* f = reinterpret_cast<float*>(bytes.data());
    for (size_t i = 0; i < n; ++i) f[i] = dist(gen);
  }
  return bytes;
}

Result<Tensor> random_tensor(gpu::Runtime& rt, DType dtype, const Shape& shape, uint32_t seed) {
  const std::vector<uint8_t> bytes = random_bytes(dtype, static_cast<size_t>(gpu::shape_numel(shape)), seed);
  return Tensor::from_host(rt, dtype, shape, bytes.data(), bytes.size());
}

const char* path_name(bool coopmat) {
  return coopmat ? "coopmat" : "scalar";
}

// ---- compute-bound: the same operands, `ops` applications ----

Status build_linear(gpu::Runtime& rt, const OpCase& c, int ops, BuiltCase& b) {
  const int64_t m = c.param("m"), k = c.param("k"), n = c.param("n");
  // The weight layout Mast3rWeights uploads: [K, N] where the tensor-core GEMM runs it (linear.h).
  const bool in_out = c.dtype == DType::kF16 && gpu::ops::coopmat_gemm_available(rt.caps());
  const auto layout = in_out ? gpu::ops::WeightLayout::kInOut : gpu::ops::WeightLayout::kOutIn;
  RECON_ASSIGN_OR_RETURN(Tensor x, random_tensor(rt, c.dtype, {m, k}, 1));
  RECON_ASSIGN_OR_RETURN(Tensor w, random_tensor(rt, c.dtype, in_out ? Shape{k, n} : Shape{n, k}, 2));
  RECON_ASSIGN_OR_RETURN(Tensor bias, random_tensor(rt, c.dtype, {n}, 3));
  RECON_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(rt, c.dtype, {m, n}));
  for (int i = 0; i < ops; ++i) {
    RECON_RETURN_IF_ERROR(
        gpu::ops::linear(*b.graph, rt.caps(), x, w, bias, out, {}, gpu::ops::GemmPath::kAuto, layout));
  }
  RECON_ASSIGN_OR_RETURN(auto tiling,
                         gpu::ops::choose_gemm_tiling(rt.caps(), c.dtype, m, n, k, gpu::ops::GemmPath::kAuto, in_out));
  b.path = std::string(path_name(tiling.coopmat)) + (in_out ? " [K,N] weight" : "");
  b.tensors = {x, w, bias, out};
  return Status::ok();
}

Status build_matmul(gpu::Runtime& rt, const OpCase& c, int ops, BuiltCase& b) {
  const int64_t m = c.param("m"), k = c.param("k"), n = c.param("n");
  RECON_ASSIGN_OR_RETURN(Tensor a, random_tensor(rt, c.dtype, {m, k}, 1));
  RECON_ASSIGN_OR_RETURN(Tensor bm, random_tensor(rt, c.dtype, {k, n}, 2));
  RECON_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(rt, c.dtype, {m, n}));
  for (int i = 0; i < ops; ++i) RECON_RETURN_IF_ERROR(gpu::ops::matmul(*b.graph, rt.caps(), a, bm, out));
  RECON_ASSIGN_OR_RETURN(auto tiling, gpu::ops::choose_gemm_tiling(rt.caps(), c.dtype, m, n, k,
                                                                   gpu::ops::GemmPath::kAuto, /*b_row_major=*/true));
  b.path = path_name(tiling.coopmat);
  b.tensors = {a, bm, out};
  return Status::ok();
}

// Self: q, k and v read in place from one packed [b, n, 3·h·d] projection, as MASt3R does.
// Cross: q [b, nq, h·d], k and v [b, nk, h·d] in tensors of their own.
Status build_attention(gpu::Runtime& rt, const OpCase& c, int ops, BuiltCase& b) {
  const int64_t batch = c.param("b"), h = c.param("h"), nq = c.param("nq"), nk = c.param("nk"), d = c.param("d");
  gpu::ops::AttentionConfig cfg;
  cfg.heads = h;
  cfg.head_dim = d;
  RECON_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(rt, c.dtype, {batch, nq, h * d}));
  int64_t k_col = 0, v_col = 0;
  if (c.param("packed") != 0) {
    RECON_ASSIGN_OR_RETURN(Tensor qkv, random_tensor(rt, c.dtype, {batch, nq, 3 * h * d}, 1));
    b.tensors = {qkv, qkv, qkv, out};
    k_col = h * d;
    v_col = 2 * h * d;
  } else {
    RECON_ASSIGN_OR_RETURN(Tensor tq, random_tensor(rt, c.dtype, {batch, nq, h * d}, 1));
    RECON_ASSIGN_OR_RETURN(Tensor tk, random_tensor(rt, c.dtype, {batch, nk, h * d}, 2));
    RECON_ASSIGN_OR_RETURN(Tensor tv, random_tensor(rt, c.dtype, {batch, nk, h * d}, 3));
    b.tensors = {tq, tk, tv, out};
  }
  const gpu::ops::HeadsView q{b.tensors[0], 0}, k{b.tensors[1], k_col}, v{b.tensors[2], v_col};
  for (int i = 0; i < ops; ++i) RECON_RETURN_IF_ERROR(gpu::ops::attention(*b.graph, rt.caps(), q, k, v, out, cfg));
  b.path = gpu::ops::attention_path_name(gpu::ops::choose_attention_path(rt.caps(), q, k, v, cfg));
  return Status::ok();
}

Status build_conv2d(gpu::Runtime& rt, const OpCase& c, int ops, BuiltCase& b) {
  const int64_t batch = c.param("b"), cin = c.param("cin"), cout = c.param("cout"), kk = c.param("k");
  gpu::ops::Conv2dParams params;
  params.stride_h = params.stride_w = c.param("stride");
  params.pad_h = params.pad_w = c.param("pad");
  const Shape in_shape{batch, cin, c.param("h"), c.param("w")}, w_shape{cout, cin, kk, kk};
  RECON_ASSIGN_OR_RETURN(Shape out_shape, gpu::ops::conv2d_output_shape(in_shape, w_shape, params));
  RECON_ASSIGN_OR_RETURN(Tensor in, random_tensor(rt, c.dtype, in_shape, 1));
  RECON_ASSIGN_OR_RETURN(Tensor w, random_tensor(rt, c.dtype, w_shape, 2));
  RECON_ASSIGN_OR_RETURN(Tensor bias, random_tensor(rt, c.dtype, {cout}, 3));
  RECON_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(rt, c.dtype, out_shape));
  for (int i = 0; i < ops; ++i) {
    RECON_RETURN_IF_ERROR(gpu::ops::conv2d(*b.graph, rt.caps(), in, w, bias, out, params));
  }
  const int64_t pixels = out_shape[2] * out_shape[3], k = cin * kk * kk;
  RECON_ASSIGN_OR_RETURN(auto tiling,
                         gpu::ops::choose_gemm_tiling(rt.caps(), c.dtype, cout, pixels, k, gpu::ops::GemmPath::kAuto,
                                                      /*b_row_major=*/false, batch));
  b.path = path_name(tiling.coopmat);
  b.tensors = {in, w, bias, out};
  return Status::ok();
}

// ---- memory-bound: a chain over a ring of buffers (op_cases.h): application i reads slot i and
// writes slot i − 1, the one application i − 1 has just read ----

// The ring's slots, flat; slot s has dtype `dtype_of(s)` and `numel` elements. The values are the
// same in every slot of one dtype (generating them dominates setup at 256 MiB); the chain then
// overwrites them.
template <typename DtypeOf>
Result<std::vector<Tensor>> make_ring(gpu::Runtime& rt, int ring, int64_t numel, DtypeOf dtype_of) {
  std::vector<Tensor> slots;
  std::vector<uint8_t> values[2];  // f32, f16
  for (int s = 0; s < ring; ++s) {
    const DType dtype = dtype_of(s);
    std::vector<uint8_t>& v = values[dtype == DType::kF16 ? 1 : 0];
    if (v.empty()) v = random_bytes(dtype, static_cast<size_t>(numel), 100);
    RECON_ASSIGN_OR_RETURN(Tensor t, Tensor::from_host(rt, dtype, {numel}, v.data(), v.size()));
    slots.push_back(std::move(t));
  }
  return slots;
}

Status build_chain(gpu::Runtime& rt, const OpCase& c, const CasePlan& plan, BuiltCase& b) {
  namespace ops = gpu::ops;
  gpu::Graph& g = *b.graph;
  const int ring = plan.ring;
  auto same = [&c](int) { return c.dtype; };
  std::vector<Tensor> slots;
  switch (c.kind) {
    case OpKind::kLayerNorm:
    case OpKind::kSoftmax: {
      const int64_t rows = c.param("rows"), cols = c.param("cols");
      RECON_ASSIGN_OR_RETURN(slots, make_ring(rt, ring, rows * cols, same));
      RECON_ASSIGN_OR_RETURN(Tensor w, random_tensor(rt, c.dtype, {cols}, 1));
      RECON_ASSIGN_OR_RETURN(Tensor bias, random_tensor(rt, c.dtype, {cols}, 2));
      for (int i = 0; i < plan.ops_per_replay; ++i) {
        RECON_ASSIGN_OR_RETURN(Tensor x, slots[i % ring].reshape({rows, cols}));
        RECON_ASSIGN_OR_RETURN(Tensor y, slots[(i + ring - 1) % ring].reshape({rows, cols}));
        if (c.kind == OpKind::kLayerNorm) {
          RECON_RETURN_IF_ERROR(ops::layer_norm(g, x, Arg(w), Arg(bias), y, 1e-6f));
        } else {
          RECON_RETURN_IF_ERROR(ops::softmax(g, x, y));
        }
      }
      slots.push_back(w);
      slots.push_back(bias);
      break;
    }
    case OpKind::kSub: {  // slots i and i + ring/2, both written long ago. Over many replays the
                          // differences grow (fp16 may reach inf); a GPU's speed does not depend on it.
      RECON_ASSIGN_OR_RETURN(slots, make_ring(rt, ring, c.param("numel"), same));
      for (int i = 0; i < plan.ops_per_replay; ++i) {
        RECON_RETURN_IF_ERROR(
            ops::binary_sub(g, slots[i % ring], slots[(i + ring / 2) % ring], slots[(i + ring - 1) % ring]));
      }
      break;
    }
    case OpKind::kCast: {  // even slots f32, odd slots f16
      RECON_ASSIGN_OR_RETURN(
          slots, make_ring(rt, ring, c.param("numel"), [](int s) { return s % 2 == 0 ? DType::kF32 : DType::kF16; }));
      for (int i = 0; i < plan.ops_per_replay; ++i) {
        RECON_RETURN_IF_ERROR(ops::cast(g, slots[i % ring], slots[(i + ring - 1) % ring]));
      }
      break;
    }
    case OpKind::kTranspose: {  // even slots [b, n, c], odd slots [b, c, n]
      const int64_t bb = c.param("b"), n = c.param("n"), ch = c.param("c");
      RECON_ASSIGN_OR_RETURN(slots, make_ring(rt, ring, bb * n * ch, same));
      for (int i = 0; i < plan.ops_per_replay; ++i) {
        const Shape in_shape = i % 2 == 0 ? Shape{bb, n, ch} : Shape{bb, ch, n};
        const Shape out_shape{in_shape[0], in_shape[2], in_shape[1]};
        RECON_ASSIGN_OR_RETURN(Tensor x, slots[i % ring].reshape(in_shape));
        RECON_ASSIGN_OR_RETURN(Tensor y, slots[(i + ring - 1) % ring].reshape(out_shape));
        RECON_RETURN_IF_ERROR(ops::transpose(g, x, y, 1, 2));
      }
      break;
    }
    case OpKind::kUpsample: {  // reads the first quarter of the previous output
      const int64_t bb = c.param("b"), ch = c.param("c"), h = c.param("h"), w = c.param("w");
      const int64_t in_numel = bb * ch * h * w;
      RECON_ASSIGN_OR_RETURN(slots, make_ring(rt, ring, 4 * in_numel, same));
      for (int i = 0; i < plan.ops_per_replay; ++i) {
        RECON_ASSIGN_OR_RETURN(Tensor prefix, slots[i % ring].slice_rows(0, in_numel));
        RECON_ASSIGN_OR_RETURN(Tensor x, prefix.reshape({bb, ch, h, w}));
        RECON_ASSIGN_OR_RETURN(Tensor y, slots[(i + ring - 1) % ring].reshape({bb, ch, 2 * h, 2 * w}));
        RECON_RETURN_IF_ERROR(ops::upsample_bilinear(g, x, y, /*align_corners=*/true));
      }
      break;
    }
    default:
      return internal_error("build_chain: " + c.name() + " is not a memory-bound case");
  }
  b.tensors = std::move(slots);
  return Status::ok();
}

}  // namespace

Result<BuiltCase> build_case(gpu::Runtime& rt, const OpCase& c, const CasePlan& plan) {
  BuiltCase b;
  b.graph = std::make_unique<gpu::Graph>(rt);
  Status s;
  switch (c.kind) {
    case OpKind::kLinear:
      s = build_linear(rt, c, plan.ops_per_replay, b);
      break;
    case OpKind::kMatmul:
      s = build_matmul(rt, c, plan.ops_per_replay, b);
      break;
    case OpKind::kAttention:
      s = build_attention(rt, c, plan.ops_per_replay, b);
      break;
    case OpKind::kConv2d:
      s = build_conv2d(rt, c, plan.ops_per_replay, b);
      break;
    default:
      s = build_chain(rt, c, plan, b);
      break;
  }
  if (!s.is_ok()) return s.with_context(c.name());
  return b;
}

}  // namespace recon::bench
