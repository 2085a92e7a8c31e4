// ONNX convolution, pooling, normalisation and matrix-product ops on the op library (2-D NCHW
// convolutions and pools as PyTorch defines them; the attributes the library cannot honour are
// named by the checks before anything is built).
#include <algorithm>
#include <string>
#include <utility>

#include "gpu/models/onnx/onnx_channels_last.h"
#include "gpu/models/onnx/onnx_fusion.h"
#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/batch_norm.h"
#include "gpu/ops/cast.h"
#include "gpu/ops/conv2d.h"
#include "gpu/ops/conv2d_grouped.h"
#include "gpu/ops/conv2d_nhwc.h"
#include "gpu/ops/conv_transpose2d.h"
#include "gpu/ops/det.h"
#include "gpu/ops/elementwise.h"
#include "gpu/ops/layer_norm.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/lrn.h"
#include "gpu/ops/matmul.h"
#include "gpu/ops/pad.h"
#include "gpu/ops/pool2d.h"
#include "gpu/ops/reduce.h"
#include "gpu/ops/softmax.h"
#include "gpu/ops/unary.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

// "" for a 2-D kernel, or a 1-D one where the builder views it as 2-D; else why not.
std::string check_kernel_rank(const Node& node, bool one_d) {
  const Attribute* k = node.attribute("kernel_shape");
  if (k == nullptr || k->ints.size() == 2 || (one_d && k->ints.size() == 1)) return {};
  return std::to_string(k->ints.size()) + (one_d ? "-D kernels (1-D and 2-D only)" : "-D kernels (2-D only)");
}

// The kernel's rank, and no dilations.
std::string check_spatial(const Node& node, bool one_d = false) {
  std::string why = check_kernel_rank(node, one_d);
  if (!why.empty()) return why;
  if (const Attribute* d = node.attribute("dilations"); d != nullptr && !all_equal(d->ints, 1)) {
    return "dilations other than 1";
  }
  return {};
}

// (top, left, bottom, right) padding from ONNX `pads` / `auto_pad` for an input of h × w and a
// kernel spanning `kernel` (dilation applied); `spatial` is 1 for 1-D ops viewed as 2-D with h = 1,
// whose pads are [left, right].
Result<std::array<int64_t, 4>> explicit_pads(OpContext& ctx, const std::array<int64_t, 2>& in,
                                             const std::array<int64_t, 2>& kernel, const std::array<int64_t, 2>& stride,
                                             int spatial = 2) {
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  if (auto_pad == "NOTSET") {
    const std::vector<int64_t> p = ctx.attr_ints("pads", std::vector<int64_t>(static_cast<size_t>(2 * spatial), 0));
    if (p.size() != static_cast<size_t>(2 * spatial)) {
      return ctx.fail("pads must have " + std::to_string(2 * spatial) + " entries");
    }
    pads = spatial == 1 ? std::array<int64_t, 4>{0, p[0], 0, p[1]} : std::array<int64_t, 4>{p[0], p[1], p[2], p[3]};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < 2; ++d) {
      const int64_t out = (in[d] + stride[d] - 1) / stride[d];
      const int64_t total = std::max<int64_t>((out - 1) * stride[d] + kernel[d] - in[d], 0);
      const int64_t small = total / 2, large = total - small;
      pads[d] = auto_pad == "SAME_UPPER" ? small : large;
      pads[d + 2] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "VALID") {
    return ctx.fail("unknown auto_pad '" + auto_pad + "'");
  }
  return pads;
}

std::array<int64_t, 2> pair_attr(OpContext& ctx, std::string_view name, int64_t fallback) {
  const std::vector<int64_t> v = ctx.attr_ints(name, {fallback, fallback});
  return {v.size() > 0 ? v[0] : fallback, v.size() > 1 ? v[1] : fallback};
}

// A per-axis attribute of a 1-D or 2-D op as (h, w); 1-D ops are viewed with h = 1.
std::array<int64_t, 2> spatial_attr(OpContext& ctx, std::string_view name, bool one_d) {
  if (!one_d) return pair_attr(ctx, name, 1);
  const std::vector<int64_t> v = ctx.attr_ints(name, {1});
  return {1, v.empty() ? 1 : v[0]};
}

// A pooling node's parameters over maps of `in` = (h, w) (h = 1 for 1-D), and the output's (h, w).
Result<std::pair<gpu::ops::Pool2dParams, std::array<int64_t, 2>>> pool_params(OpContext& ctx, bool max, bool one_d,
                                                                              const std::array<int64_t, 2>& in) {
  gpu::ops::Pool2dParams p;
  const std::vector<int64_t> k = ctx.attr_ints("kernel_shape");
  const size_t axes = one_d ? 1 : 2;
  if (k.size() != axes) return ctx.fail("kernel_shape must have " + std::to_string(axes) + " entries");
  p.kernel = one_d ? std::array<int64_t, 2>{1, k[0]} : std::array<int64_t, 2>{k[0], k[1]};
  p.stride = spatial_attr(ctx, "strides", one_d);
  if (max) p.dilation = spatial_attr(ctx, "dilations", one_d);
  const std::array<int64_t, 2> span{p.dilation[0] * (p.kernel[0] - 1) + 1, p.dilation[1] * (p.kernel[1] - 1) + 1};
  RECON_ASSIGN_OR_RETURN(const auto pads, explicit_pads(ctx, in, span, p.stride, one_d ? 1 : 2));
  p.pad = {pads[0], pads[1]};
  p.pad_end = {pads[2], pads[3]};  // SAME_UPPER / SAME_LOWER pad one side more
  p.ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  p.count_include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  Result<std::array<int64_t, 2>> hw = gpu::ops::pool2d_output_size(in[0], in[1], p);
  if (!hw) return ctx.fail(hw.status().message());
  return std::pair{p, *hw};
}

Status pool(OpContext& ctx, bool max) {
  // MaxPool of int8 and uint8: i32 on the device, compared exactly.
  const bool ints = max && !is_floating(ctx.input(0).type);
  RECON_ASSIGN_OR_RETURN(Arg x, ints ? ctx.device_input(0) : ctx.float_input(0));
  const size_t rank = x.shape().size();
  if (rank != 3 && rank != 4) return ctx.fail("1-D or 2-D pooling only: input " + shape_string(x.shape()));
  const bool one_d = rank == 3;
  if (one_d) {
    // [N, C, W] as [N, C, 1, W].
    RECON_ASSIGN_OR_RETURN(x, gpu::ops::reshape_view(x, {x.shape()[0], x.shape()[1], 1, x.shape()[2]}));
  }
  RECON_ASSIGN_OR_RETURN(const auto params, pool_params(ctx, max, one_d, {x.shape()[2], x.shape()[3]}));
  const auto& [p, hw] = params;
  const int64_t n = x.shape()[0], c = x.shape()[1];
  const Shape out_shape = one_d ? Shape{n, c, hw[1]} : Shape{n, c, hw[0], hw[1]};
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, out_shape));
  RECON_ASSIGN_OR_RETURN(const Arg out4, gpu::ops::reshape_view(out, {n, c, hw[0], hw[1]}));
  if (!max) return gpu::ops::avg_pool2d(ctx.graph(), x, out4, p);
  if (!ctx.wants_output(1)) return gpu::ops::max_pool2d(ctx.graph(), x, out4, p);
  // MaxPool's Indices: int64, i32 on the device.
  RECON_ASSIGN_OR_RETURN(Arg indices, ctx.new_output(1, ElemType::kInt64, out_shape));
  RECON_ASSIGN_OR_RETURN(const Arg indices4, gpu::ops::reshape_view(indices, out4.shape()));
  return gpu::ops::max_pool2d_with_indices(ctx.graph(), x, out4, indices4, p, ctx.attr_int("storage_order", 0) != 0);
}

Status global_pool(OpContext& ctx, gpu::ops::ReduceOp op) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const Shape& s = x.shape();
  if (s.size() < 3) return ctx.fail("input must be [N, C, spatial...], is " + shape_string(s));
  int64_t spatial = 1;
  for (size_t d = 2; d < s.size(); ++d) spatial *= s[d];
  Shape out_shape = s;
  for (size_t d = 2; d < s.size(); ++d) out_shape[d] = 1;
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, out_shape));
  RECON_ASSIGN_OR_RETURN(Arg flat, gpu::ops::reshape_view(x, {s[0] * s[1], spatial}));
  RECON_ASSIGN_OR_RETURN(Arg flat_out, gpu::ops::reshape_view(out, {s[0] * s[1], 1}));
  return gpu::ops::reduce(ctx.graph(), op, flat, flat_out, 1);
}

// MaxPool / AveragePool in kChannelsLastDomain: x and the output [N, H, W, C].
Status pool_channels_last(OpContext& ctx, bool max) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const Shape& s = x.shape();
  if (s.size() != 4) return ctx.fail("channels-last pooling of " + shape_string(s) + ": [N, H, W, C] only");
  RECON_ASSIGN_OR_RETURN(const auto params, pool_params(ctx, max, /*one_d=*/false, {s[1], s[2]}));
  const auto& [p, hw] = params;
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, {s[0], hw[0], hw[1], s[3]}));
  return max ? gpu::ops::max_pool2d_nhwc(ctx.graph(), x, out, p) : gpu::ops::avg_pool2d_nhwc(ctx.graph(), x, out, p);
}

// GlobalAveragePool / GlobalMaxPool in kChannelsLastDomain: [N, H, W, C] → [N, 1, 1, C].
Status global_pool_channels_last(OpContext& ctx, gpu::ops::ReduceOp op) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const Shape& s = x.shape();
  if (s.size() != 4) return ctx.fail("channels-last pooling of " + shape_string(s) + ": [N, H, W, C] only");
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, {s[0], 1, 1, s[3]}));
  RECON_ASSIGN_OR_RETURN(Arg rows, gpu::ops::reshape_view(x, {s[0], s[1] * s[2], s[3]}));
  RECON_ASSIGN_OR_RETURN(Arg rows_out, gpu::ops::reshape_view(out, {s[0], 1, s[3]}));
  return gpu::ops::reduce(ctx.graph(), op, rows, rows_out, 1);
}

// The activation a fusion attached to this node (onnx_fusion.h).
gpu::ops::Activation fused_activation(const OpContext& ctx) {
  return static_cast<gpu::ops::Activation>(ctx.attr_int(kFusedActivation, 0));
}

// The residual a fusion attached to this Conv node (onnx_fusion.h); other ops' inputs at that index
// are their own.
bool fused_residual(const OpContext& ctx) {
  return ctx.node().op_type == "Conv" && ctx.has_input(kConvResidualInput);
}

gpu::ops::UnaryOp as_unary(gpu::ops::Activation a) {
  switch (a) {
    case gpu::ops::Activation::kRelu:
      return gpu::ops::UnaryOp::kRelu;
    case gpu::ops::Activation::kSigmoid:
      return gpu::ops::UnaryOp::kSigmoid;
    case gpu::ops::Activation::kTanh:
      return gpu::ops::UnaryOp::kTanh;
    default:
      return gpu::ops::UnaryOp::kIdentity;
  }
}

// [rows, cols] with the axis flattening ONNX's opset < 13 Softmax (and Flatten) use.
std::array<int64_t, 2> flatten_at(const Shape& s, int64_t axis) {
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) (d < axis ? rows : cols) *= s[static_cast<size_t>(d)];
  return {rows, cols};
}

// A group-1, undilated, symmetrically padded 2-D convolution: the implicit GEMM with the fused
// epilogue.
// With `channels_last` the output and the residual are [N, H, W, C], w is [O, KH, KW, I] and x is
// stored as that says (onnx_channels_last.h).
Status conv_gemm(OpContext& ctx, const Arg& x, const Arg& w, const std::optional<Arg>& bias,
                 const gpu::ops::Conv2dGroupedParams& g, const MakeOutput& make,
                 std::optional<gpu::ops::ConvInput> channels_last = std::nullopt) {
  gpu::ops::Conv2dParams p;
  p.stride_h = g.stride_h;
  p.stride_w = g.stride_w;
  p.pad_h = g.pad_top;
  p.pad_w = g.pad_left;
  Result<Shape> shape = channels_last ? gpu::ops::conv2d_nhwc_output_shape(x.shape(), w.shape(), p, *channels_last)
                                      : gpu::ops::conv2d_output_shape(x.shape(), w.shape(), p);
  if (!shape) return ctx.fail(shape.status().message());
  gpu::ops::Epilogue epilogue;
  epilogue.activation = fused_activation(ctx);
  epilogue.residual_first = ctx.attr_int(kFusedResidualFirst, 0) != 0;
  std::optional<Arg> added;  // a fused residual that does not have the output's shape
  if (fused_residual(ctx)) {
    RECON_ASSIGN_OR_RETURN(Arg r, ctx.float_input(kConvResidualInput));
    (r.shape() == *shape ? epilogue.residual : added) = r;
  }
  // A broadcast residual is added after the convolution, and an activation meant for the sum after that.
  const gpu::ops::Activation after_add = added && epilogue.residual_first
                                             ? std::exchange(epilogue.activation, gpu::ops::Activation::kNone)
                                             : gpu::ops::Activation::kNone;
  Shape out_shape = *shape;
  if (added) {
    Result<Shape> sum = gpu::ops::broadcast_shape(*shape, added->shape());
    if (!sum) return ctx.fail(sum.status().message());
    out_shape = *sum;
  }
  const auto convolve = [&](const Arg& into) {
    return channels_last ? gpu::ops::conv2d_nhwc(ctx.graph(), ctx.caps(), x, w, bias, into, p, epilogue,
                                                 ctx.gemm_path(), *channels_last)
                         : gpu::ops::conv2d(ctx.graph(), ctx.caps(), x, w, bias, into, p, epilogue, ctx.gemm_path());
  };
  RECON_ASSIGN_OR_RETURN(Arg out, make(out_shape));
  if (!added) return convolve(out);
  RECON_ASSIGN_OR_RETURN(Arg conv_out, ctx.scratch(out.dtype(), *shape));
  RECON_RETURN_IF_ERROR(convolve(conv_out));
  RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), gpu::ops::BinaryOp::kAdd, conv_out, *added, out));
  if (after_add == gpu::ops::Activation::kNone) return Status::ok();
  return gpu::ops::unary(ctx.graph(), as_unary(after_add), out, out);
}

// Any other convolution: the direct kernel, then what a fusion attached (a residual, an activation)
// as separate passes.
Status conv_direct(OpContext& ctx, const Arg& x, const Arg& w, const std::optional<Arg>& bias,
                   const gpu::ops::Conv2dGroupedParams& p, bool one_d, const MakeOutput& make) {
  Result<Shape> shape = gpu::ops::conv2d_grouped_output_shape(x.shape(), w.shape(), p);
  if (!shape) return ctx.fail(shape.status().message());
  const Shape onnx_shape = one_d ? Shape{(*shape)[0], (*shape)[1], (*shape)[3]} : *shape;
  const gpu::ops::UnaryOp act = as_unary(fused_activation(ctx));
  const bool residual_first = ctx.attr_int(kFusedResidualFirst, 0) != 0;
  std::optional<Arg> residual;
  Shape out_shape = onnx_shape;
  if (fused_residual(ctx)) {
    RECON_ASSIGN_OR_RETURN(residual, ctx.float_input(kConvResidualInput));
    Result<Shape> sum = gpu::ops::broadcast_shape(onnx_shape, residual->shape());
    if (!sum) return ctx.fail(sum.status().message());
    out_shape = *sum;
  }
  RECON_ASSIGN_OR_RETURN(Arg out, make(out_shape));
  Arg conv_out = out;
  if (residual) {
    RECON_ASSIGN_OR_RETURN(conv_out, ctx.scratch(out.dtype(), onnx_shape));
  }
  RECON_ASSIGN_OR_RETURN(Arg conv_view, gpu::ops::reshape_view(conv_out, *shape));
  RECON_RETURN_IF_ERROR(gpu::ops::conv2d_grouped(ctx.graph(), x, w, bias, conv_view, p));
  // The epilogue's order: act(conv) + residual, or act(conv + residual) when residual_first.
  if (act != gpu::ops::UnaryOp::kIdentity && (!residual || !residual_first)) {
    RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), act, conv_out, conv_out));
  }
  if (!residual) return Status::ok();
  RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), gpu::ops::BinaryOp::kAdd, conv_out, *residual, out));
  if (act == gpu::ops::UnaryOp::kIdentity || !residual_first) return Status::ok();
  return gpu::ops::unary(ctx.graph(), act, out, out);
}

}  // namespace

std::string check_conv(const Node& node, int64_t) {
  return check_kernel_rank(node, /*one_d=*/true);
}

Status conv(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(Arg w, ctx.float_input(1));
  std::optional<Arg> bias;
  if (ctx.has_input(2)) {
    RECON_ASSIGN_OR_RETURN(bias, ctx.float_input(2));
  }
  return conv_of(ctx, x, w, bias, [&ctx](const Shape& shape) { return ctx.new_output(0, ctx.input(0).type, shape); });
}

Status conv_of(OpContext& ctx, Arg x, Arg w, const std::optional<Arg>& bias, const MakeOutput& make) {
  const size_t rank = x.shape().size();
  if ((rank != 3 && rank != 4) || w.shape().size() != rank) {
    return ctx.fail("1-D or 2-D convolution only: input " + shape_string(x.shape()) + ", weight " +
                    shape_string(w.shape()));
  }
  const bool one_d = rank == 3;
  if (one_d) {
    // [N, C, W] as [N, C, 1, W].
    RECON_ASSIGN_OR_RETURN(x, gpu::ops::reshape_view(x, {x.shape()[0], x.shape()[1], 1, x.shape()[2]}));
    RECON_ASSIGN_OR_RETURN(w, gpu::ops::reshape_view(w, {w.shape()[0], w.shape()[1], 1, w.shape()[2]}));
  }
  gpu::ops::Conv2dGroupedParams p;
  p.groups = ctx.attr_int("group", 1);
  const std::array<int64_t, 2> stride = spatial_attr(ctx, "strides", one_d);
  const std::array<int64_t, 2> dilation = spatial_attr(ctx, "dilations", one_d);
  p.stride_h = stride[0];
  p.stride_w = stride[1];
  p.dilation_h = dilation[0];
  p.dilation_w = dilation[1];
  const std::array<int64_t, 2> span{dilation[0] * (w.shape()[2] - 1) + 1, dilation[1] * (w.shape()[3] - 1) + 1};
  RECON_ASSIGN_OR_RETURN(auto pads, explicit_pads(ctx, {x.shape()[2], x.shape()[3]}, span, stride, one_d ? 1 : 2));
  p.pad_top = pads[0];
  p.pad_left = pads[1];
  p.pad_bottom = pads[2];
  p.pad_right = pads[3];
  const bool gemm = !one_d && p.groups == 1 && p.dilation_h == 1 && p.dilation_w == 1 && p.pad_top == p.pad_bottom &&
                    p.pad_left == p.pad_right;
  return gemm ? conv_gemm(ctx, x, w, bias, p, make) : conv_direct(ctx, x, w, bias, p, one_d, make);
}

// The [O, KH, KW, I] weights of a channels-last Conv whose [O, I, KH, KW] weights the rewrite could
// not permute (onnx_channels_last.h): a value known at load is permuted on the host once and only
// that copy uploaded (shared by every compiled graph, as ConvTranspose's flipped kernel); weights
// computed at run time are permuted on the device every run.
Result<Arg> channels_last_weights(OpContext& ctx) {
  if (ctx.attr_int(kChannelsLastPlanarWeights, 0) == 0) return ctx.float_input(1);
  const HostTensor* host = ctx.has_input(1) && ctx.input(1).host ? &*ctx.input(1).host : nullptr;
  if (host != nullptr && (host->type == ElemType::kFloat || host->type == ElemType::kFloat16)) {
    if (host->dims.size() != 4) {
      return ctx.fail("channels-last convolution by weights " + shape_string(host->dims) + ": 2-D only");
    }
    return ctx.derived_input(1, "channels-last", [&]() -> Result<Arg> {
      return upload_host_tensor(ctx.runtime(), ohwi_copy(*host), ctx.float_dtype());
    });
  }
  RECON_ASSIGN_OR_RETURN(Arg w, ctx.float_input(1));
  const Shape& s = w.shape();
  if (s.size() != 4) return ctx.fail("channels-last convolution by weights " + shape_string(s) + ": 2-D only");
  RECON_ASSIGN_OR_RETURN(Arg permuted, ctx.scratch(w.dtype(), {s[0], s[2], s[3], s[1]}));
  RECON_RETURN_IF_ERROR(gpu::ops::permute(ctx.graph(), w, permuted, {0, 2, 3, 1}));
  return permuted;
}

Status conv_channels_last(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(Arg w, channels_last_weights(ctx));
  std::optional<Arg> bias;
  if (ctx.has_input(2)) {
    RECON_ASSIGN_OR_RETURN(bias, ctx.float_input(2));
  }
  if (x.shape().size() != 4 || w.shape().size() != 4) {
    return ctx.fail("channels-last convolution of " + shape_string(x.shape()) + " by " + shape_string(w.shape()) +
                    ": [N, H, W, C] and [O, KH, KW, I] only");
  }
  const bool planar = ctx.attr_int(kChannelsLastPlanarInput, 0) != 0;
  const int64_t h = x.shape()[planar ? 2 : 1], wd = x.shape()[planar ? 3 : 2];
  gpu::ops::Conv2dGroupedParams p;
  const std::array<int64_t, 2> stride = pair_attr(ctx, "strides", 1);
  p.stride_h = stride[0];
  p.stride_w = stride[1];
  RECON_ASSIGN_OR_RETURN(const auto pads, explicit_pads(ctx, {h, wd}, {w.shape()[1], w.shape()[2]}, stride));
  if (pads[0] != pads[2] || pads[1] != pads[3]) return ctx.fail("channels-last convolution with asymmetric padding");
  p.pad_top = p.pad_bottom = pads[0];
  p.pad_left = p.pad_right = pads[1];
  return conv_gemm(
      ctx, x, w, bias, p, [&ctx](const Shape& shape) { return ctx.new_output(0, ctx.input(0).type, shape); },
      planar ? gpu::ops::ConvInput::kPlanar : gpu::ops::ConvInput::kChannelsLast);
}

Status max_pool_channels_last(OpContext& ctx) {
  return pool_channels_last(ctx, true);
}
Status average_pool_channels_last(OpContext& ctx) {
  return pool_channels_last(ctx, false);
}
Status global_average_pool_channels_last(OpContext& ctx) {
  return global_pool_channels_last(ctx, gpu::ops::ReduceOp::kMean);
}
Status global_max_pool_channels_last(OpContext& ctx) {
  return global_pool_channels_last(ctx, gpu::ops::ReduceOp::kMax);
}

std::string check_conv_transpose(const Node& node, int64_t) {
  if (const Attribute* g = node.attribute("group"); g != nullptr && g->i != 1) {
    return "grouped transposed convolution (group != 1)";
  }
  return check_kernel_rank(node, /*one_d=*/true);
}

namespace {

// ConvTranspose's per-axis (h, w) sizes: the input's, the kernel's extent (dilation applied), and
// from the attributes the strides, output padding and the padding before and after that give the
// output's size (ONNX's rules: explicit pads, or pads derived from output_shape or SAME_UPPER/SAME_LOWER).
struct TransposedGeometry {
  std::array<int64_t, 2> kernel{}, stride{}, output_padding{}, pad_begin{}, pad_end{}, out{};
};

Result<TransposedGeometry> transposed_geometry(OpContext& ctx, const std::array<int64_t, 2>& in,
                                               const std::array<int64_t, 2>& kernel, bool one_d) {
  TransposedGeometry t;
  t.kernel = kernel;
  t.stride = spatial_attr(ctx, "strides", one_d);
  const int spatial = one_d ? 1 : 2;
  const std::vector<int64_t> op = ctx.attr_ints("output_padding", std::vector<int64_t>(spatial, 0));
  const std::vector<int64_t> shape = ctx.attr_ints("output_shape");
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  const std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (op.size() != static_cast<size_t>(spatial) || pads.size() != static_cast<size_t>(2 * spatial) ||
      (!shape.empty() && shape.size() < static_cast<size_t>(spatial))) {
    return ctx.fail("output_padding, pads or output_shape of the wrong length");
  }
  for (int d = 0; d < 2; ++d) {
    const bool used = !one_d || d == 1;  // a 1-D op is viewed with h = 1
    const int a = one_d ? 0 : d;         // the attribute's entry for this axis
    t.output_padding[d] = used ? op[a] : 0;
    const int64_t full = t.stride[d] * (in[d] - 1) + t.output_padding[d] + t.kernel[d];
    if (!used) {
      t.out[d] = in[d];
      continue;
    }
    if (!shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      t.out[d] = !shape.empty() ? shape[shape.size() - spatial + a] : in[d] * t.stride[d];
      // An output larger than the full one is padded after with positions no input reaches (as ONNX
      // Runtime does: it clamps the total at 0).
      const int64_t total = std::max<int64_t>(full - t.out[d], 0);
      const bool upper = auto_pad == "SAME_UPPER";
      t.pad_begin[d] = upper ? total / 2 : total - total / 2;
      t.pad_end[d] = total - t.pad_begin[d];
    } else if (auto_pad == "NOTSET" || auto_pad == "VALID") {
      t.pad_begin[d] = auto_pad == "VALID" ? 0 : pads[a];
      t.pad_end[d] = auto_pad == "VALID" ? 0 : pads[a + spatial];
      t.out[d] = full - t.pad_begin[d] - t.pad_end[d];
    } else {
      return ctx.fail("unknown auto_pad '" + auto_pad + "'");
    }
    if (t.out[d] < 1) return ctx.fail("the output would be empty along a spatial axis");
  }
  return t;
}

// ConvTranspose's kernel as a convolution's: W [Cin, Cout, KH, KW] flipped along both spatial axes
// into [Cout, Cin, KH, KW]. Constant weights are flipped on the host once per model, not per
// compiled graph; weights computed at run time are reversed and permuted on the device.
Result<Arg> flipped_kernel(OpContext& ctx, int64_t cin, int64_t cout, int64_t kh, int64_t kw) {
  if (!ctx.input(1).is_host()) {
    RECON_ASSIGN_OR_RETURN(Arg w, ctx.float_input(1));
    RECON_ASSIGN_OR_RETURN(w, gpu::ops::reshape_view(w, {cin, cout, kh, kw}));
    RECON_ASSIGN_OR_RETURN(const Arg reversed, ctx.scratch(w.dtype(), {cin, cout, kh, kw}));
    RECON_ASSIGN_OR_RETURN(const Arg kernel, ctx.scratch(w.dtype(), {cout, cin, kh, kw}));
    const gpu::ops::SliceAxis backwards{INT64_MAX, INT64_MIN, -1};
    RECON_RETURN_IF_ERROR(gpu::ops::slice(ctx.graph(), w, reversed, {{}, {}, backwards, backwards}));
    RECON_RETURN_IF_ERROR(gpu::ops::permute(ctx.graph(), reversed, kernel, {1, 0, 2, 3}));
    return kernel;
  }
  const HostTensor& w_host = *ctx.input(1).host;
  return ctx.derived_input(1, "conv_transpose_flipped", [&]() -> Result<Arg> {
    RECON_ASSIGN_OR_RETURN(const std::vector<double> wv, host_doubles(w_host));
    std::vector<float> flipped(static_cast<size_t>(cout * cin * kh * kw));
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t co = 0; co < cout; ++co)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t xx = 0; xx < kw; ++xx) {
            flipped[static_cast<size_t>(((co * cin + ci) * kh + y) * kw + xx)] = static_cast<float>(
                wv[static_cast<size_t>(((ci * cout + co) * kh + (kh - 1 - y)) * kw + (kw - 1 - xx))]);
          }
    return upload_host_tensor(ctx.runtime(), make_float_tensor({cout, cin, kh, kw}, flipped), ctx.float_dtype());
  });
}

// The stride-1 convolution of the framed input with the flipped kernel: the implicit GEMM, or the
// direct kernel where the kernel is dilated.
Status flipped_convolution(OpContext& ctx, const Arg& framed, const Arg& kernel, const std::optional<Arg>& bias,
                           const Arg& out, const std::array<int64_t, 2>& dilation) {
  if (dilation == std::array<int64_t, 2>{1, 1}) {
    return gpu::ops::conv2d(ctx.graph(), ctx.caps(), framed, kernel, bias, out, {}, {}, ctx.gemm_path());
  }
  gpu::ops::Conv2dGroupedParams p;
  p.dilation_h = dilation[0];
  p.dilation_w = dilation[1];
  return gpu::ops::conv2d_grouped(ctx.graph(), framed, kernel, bias, out, p);
}

// Any transposed convolution of group 1: the input with stride − 1 zeros between its elements and
// span − 1 − pad around it (span: the kernel's extent with dilation), through a stride-1
// convolution with the kernel flipped, its in/out channels swapped and the same dilation. The zeros
// cost (stride² − 1)/stride² of the arithmetic; stride == kernel without padding or dilation runs
// as one GEMM instead (ops::conv_transpose2d).
Status conv_transpose_general(OpContext& ctx, Arg x, const std::optional<Arg>& bias, bool one_d) {
  const Shape& wd = ctx.input(1).shape;
  if (one_d) {
    RECON_ASSIGN_OR_RETURN(x, gpu::ops::reshape_view(x, {x.shape()[0], x.shape()[1], 1, x.shape()[2]}));
  }
  const int64_t n = x.shape()[0], cin = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t kh = one_d ? 1 : wd[2], kw = one_d ? wd[2] : wd[3], cout = wd[1];
  if (wd[0] != cin)
    return ctx.fail("weight has " + std::to_string(wd[0]) + " input channels, x " + std::to_string(cin));
  const std::array<int64_t, 2> dilation = spatial_attr(ctx, "dilations", one_d);
  const std::array<int64_t, 2> span{dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1};
  RECON_ASSIGN_OR_RETURN(const TransposedGeometry t, transposed_geometry(ctx, {h, w}, span, one_d));
  RECON_ASSIGN_OR_RETURN(const Arg kernel, flipped_kernel(ctx, cin, cout, kh, kw));

  // Zeros between the elements: [N, C, H, 1, W, 1] padded to [N, C, H, sh, W, sw].
  Arg spread = x;
  const auto [sh, sw] = t.stride;
  if (sh > 1 || sw > 1) {
    RECON_ASSIGN_OR_RETURN(const Arg x6, gpu::ops::reshape_view(x, {n, cin, h, 1, w, 1}));
    RECON_ASSIGN_OR_RETURN(const Arg z6, ctx.scratch(x.dtype(), {n, cin, h, sh, w, sw}));
    RECON_RETURN_IF_ERROR(gpu::ops::pad(ctx.graph(), x6, z6, {0, 0, 0, 0, 0, 0}, gpu::ops::PadMode::kConstant));
    RECON_ASSIGN_OR_RETURN(spread, gpu::ops::reshape_view(z6, {n, cin, h * sh, w * sw}));
  }
  // Then span − 1 − pad around them (a negative amount crops), and what the output needs after.
  const int64_t ph = t.out[0] + span[0] - 1, pw = t.out[1] + span[1] - 1;
  RECON_ASSIGN_OR_RETURN(const Arg framed, ctx.scratch(x.dtype(), {n, cin, ph, pw}));
  RECON_RETURN_IF_ERROR(gpu::ops::pad(ctx.graph(), spread, framed,
                                      {0, 0, span[0] - 1 - t.pad_begin[0], span[1] - 1 - t.pad_begin[1]},
                                      gpu::ops::PadMode::kConstant));
  const Shape out_shape = one_d ? Shape{n, cout, t.out[1]} : Shape{n, cout, t.out[0], t.out[1]};
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, out_shape));
  RECON_ASSIGN_OR_RETURN(const Arg out4, gpu::ops::reshape_view(out, {n, cout, t.out[0], t.out[1]}));
  return flipped_convolution(ctx, framed, kernel, bias, out4, dilation);
}

}  // namespace

Status conv_transpose(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const Shape& ws = ctx.input(1).shape;
  const size_t rank = x.shape().size();
  if ((rank != 3 && rank != 4) || ws.size() != rank) {
    return ctx.fail("1-D or 2-D transposed convolution only: input " + shape_string(x.shape()) + ", weight " +
                    shape_string(ws));
  }
  if (!is_floating(ctx.input(1).type)) {
    return ctx.fail(std::string("weight is ") + elem_type_name(ctx.input(1).type) + "; float or float16 only");
  }
  std::optional<Arg> bias;
  if (ctx.has_input(2)) {
    RECON_ASSIGN_OR_RETURN(bias, ctx.float_input(2));
  }
  const bool plain = rank == 4 && ctx.attr_ints("strides") == std::vector<int64_t>{ws[2], ws[3]} &&
                     all_equal(ctx.attr_ints("pads"), 0) && all_equal(ctx.attr_ints("output_padding"), 0) &&
                     ctx.attr_ints("output_shape").empty() && ctx.attr_string("auto_pad", "NOTSET") == "NOTSET" &&
                     all_equal(ctx.attr_ints("dilations"), 1);
  // The general path uploads the kernel flipped, so only the plain one puts the weight itself up.
  if (!plain) return conv_transpose_general(ctx, x, bias, rank == 3);
  RECON_ASSIGN_OR_RETURN(Arg w, ctx.float_input(1));
  const Shape out_shape{x.shape()[0], w.shape()[1], x.shape()[2] * w.shape()[2], x.shape()[3] * w.shape()[3]};
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, out_shape));
  return gpu::ops::conv_transpose2d(ctx.graph(), ctx.caps(), x, w, bias, out, {}, ctx.gemm_path());
}

std::string check_max_pool(const Node& node, int64_t) {
  return check_kernel_rank(node, /*one_d=*/true);
}

std::string check_average_pool(const Node& node, int64_t) {
  return check_spatial(node, /*one_d=*/true);
}

Status max_pool(OpContext& ctx) {
  return pool(ctx, true);
}
Status average_pool(OpContext& ctx) {
  return pool(ctx, false);
}
Status global_average_pool(OpContext& ctx) {
  return global_pool(ctx, gpu::ops::ReduceOp::kMean);
}
Status global_max_pool(OpContext& ctx) {
  return global_pool(ctx, gpu::ops::ReduceOp::kMax);
}

std::string check_batch_norm(const Node& node, int64_t opset) {
  if (const Attribute* t = node.attribute("training_mode"); t != nullptr && t->i != 0)
    return "training-mode BatchNormalization";
  // Opsets 6-8: `spatial` = 0 (statistics per activation, not per channel) and, before 7, the
  // training mode that is_test = 0 selects.
  if (const Attribute* s = node.attribute("spatial"); opset < 9 && s != nullptr && s->i == 0)
    return "BatchNormalization with per-activation statistics (spatial = 0)";
  if (const Attribute* t = node.attribute("is_test"); opset < 7 && (t == nullptr || t->i == 0))
    return "training-mode BatchNormalization (is_test = 0)";
  if (node.outputs.size() > 1) return "BatchNormalization's running statistics outputs (training)";
  return {};
}

Status batch_norm(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(Arg scale, ctx.float_input(1));
  RECON_ASSIGN_OR_RETURN(Arg bias, ctx.float_input(2));
  RECON_ASSIGN_OR_RETURN(Arg mean, ctx.float_input(3));
  RECON_ASSIGN_OR_RETURN(Arg var, ctx.float_input(4));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, x.shape()));
  return gpu::ops::batch_norm(ctx.graph(), x, mean, var, scale, bias, out, ctx.attr_float("epsilon", 1e-5f));
}

namespace {

// Output i of LayerNormalization (Mean or InvStdDev), when the node asks for it, from `stat` [rows,
// 1] in fp32: float whatever the execution dtype, shaped as x with the normalised axes as 1.
Status write_statistic(OpContext& ctx, size_t i, const Arg& stat, int64_t axis) {
  if (!ctx.wants_output(i)) return Status::ok();
  Shape kept = ctx.input(0).shape;
  for (size_t d = static_cast<size_t>(axis); d < kept.size(); ++d) kept[d] = 1;
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(i, ElemType::kFloat, kept));
  RECON_ASSIGN_OR_RETURN(Arg out2, gpu::ops::reshape_view(out, stat.shape()));
  return gpu::ops::cast(ctx.graph(), stat, out2);
}

// LayerNormalization's Mean and InvStdDev outputs (for training) of x2 [rows, cols], in fp32 (its
// stash_type) as the op library's layer norm forms them: the mean, then the mean of the squared
// deviations, 1/sqrt(var + eps).
Status layer_norm_statistics(OpContext& ctx, const Arg& x2, int64_t axis, float eps) {
  if (ctx.attr_int("stash_type", 1) != 1) return ctx.fail("Mean and InvStdDev in a stash_type other than float");
  const int64_t rows = x2.shape()[0], cols = x2.shape()[1];
  Arg x32 = x2;
  if (x2.dtype() != DType::kF32) {
    RECON_ASSIGN_OR_RETURN(x32, ctx.scratch(DType::kF32, {rows, cols}));
    RECON_RETURN_IF_ERROR(gpu::ops::cast(ctx.graph(), x2, x32));
  }
  RECON_ASSIGN_OR_RETURN(Arg mean, ctx.scratch(DType::kF32, {rows, 1}));
  RECON_ASSIGN_OR_RETURN(Arg deviations, ctx.scratch(DType::kF32, {rows, cols}));
  RECON_ASSIGN_OR_RETURN(Arg inv_std_dev, ctx.scratch(DType::kF32, {rows, 1}));
  RECON_RETURN_IF_ERROR(gpu::ops::reduce(ctx.graph(), gpu::ops::ReduceOp::kMean, x32, mean, 1));
  RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), gpu::ops::BinaryOp::kSub, x32, mean, deviations));
  // Squared in place.
  RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), gpu::ops::BinaryOp::kMul, deviations, deviations, deviations));
  RECON_RETURN_IF_ERROR(gpu::ops::reduce(ctx.graph(), gpu::ops::ReduceOp::kMean, deviations, inv_std_dev, 1));
  RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), gpu::ops::UnaryOp::kSqrt, inv_std_dev, inv_std_dev, 1.0f, eps));
  RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), gpu::ops::UnaryOp::kReciprocal, inv_std_dev, inv_std_dev));
  RECON_RETURN_IF_ERROR(write_statistic(ctx, 1, mean, axis));
  return write_statistic(ctx, 2, inv_std_dev, axis);
}

}  // namespace

Status layer_norm(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  int64_t axis = ctx.attr_int("axis", -1);
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, rank));
  const auto [rows, cols] = flatten_at(x.shape(), axis);
  RECON_ASSIGN_OR_RETURN(Arg scale, ctx.float_input(1));
  if (scale.numel() != cols)
    return ctx.fail("Scale must cover the normalised axes (broadcast scales are not supported)");
  RECON_ASSIGN_OR_RETURN(Arg scale_flat, gpu::ops::reshape_view(scale, {cols}));
  std::optional<Arg> bias;
  if (ctx.has_input(2)) {
    RECON_ASSIGN_OR_RETURN(Arg b, ctx.float_input(2));
    if (b.numel() != cols) return ctx.fail("B must cover the normalised axes");
    RECON_ASSIGN_OR_RETURN(bias, gpu::ops::reshape_view(b, {cols}));
  }
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, x.shape()));
  RECON_ASSIGN_OR_RETURN(Arg x2, gpu::ops::reshape_view(x, {rows, cols}));
  RECON_ASSIGN_OR_RETURN(Arg out2, gpu::ops::reshape_view(out, {rows, cols}));
  const float eps = ctx.attr_float("epsilon", 1e-5f);
  RECON_RETURN_IF_ERROR(gpu::ops::layer_norm(ctx.graph(), x2, scale_flat, bias, out2, eps));
  if (!ctx.wants_output(1) && !ctx.wants_output(2)) return Status::ok();
  return layer_norm_statistics(ctx, x2, axis, eps);
}

// InstanceNormalization: each (n, c) plane normalised as a row of layer_norm, then the
// per-channel scale and bias broadcast over [N, C, spatial].
Status instance_norm(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const Shape& s = x.shape();
  if (s.size() < 3) return ctx.fail("input must be [N, C, spatial...], is " + shape_string(s));
  const int64_t spatial = shape_numel(s) / (s[0] * s[1]);
  RECON_ASSIGN_OR_RETURN(Arg scale, ctx.float_input(1));
  RECON_ASSIGN_OR_RETURN(Arg bias, ctx.float_input(2));
  if (scale.numel() != s[1] || bias.numel() != s[1]) return ctx.fail("scale and B must have C elements");
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, s));
  RECON_ASSIGN_OR_RETURN(Arg x2, gpu::ops::reshape_view(x, {s[0] * s[1], spatial}));
  RECON_ASSIGN_OR_RETURN(Arg out2, gpu::ops::reshape_view(out, {s[0] * s[1], spatial}));
  RECON_RETURN_IF_ERROR(
      gpu::ops::layer_norm(ctx.graph(), x2, std::nullopt, std::nullopt, out2, ctx.attr_float("epsilon", 1e-5f)));
  RECON_ASSIGN_OR_RETURN(Arg out3, gpu::ops::reshape_view(out, {s[0], s[1], spatial}));
  RECON_ASSIGN_OR_RETURN(Arg scale2, gpu::ops::reshape_view(scale, {s[1], 1}));
  RECON_ASSIGN_OR_RETURN(Arg bias2, gpu::ops::reshape_view(bias, {s[1], 1}));
  RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), gpu::ops::BinaryOp::kMul, out3, scale2, out3));
  return gpu::ops::binary(ctx.graph(), gpu::ops::BinaryOp::kAdd, out3, bias2, out3);
}

// Det of [..., M, M] into [...], eliminated in an fp32 scratch copy.
Status det(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const Shape& s = x.shape();
  if (s.size() < 2) return ctx.fail("expects [..., M, M], is " + shape_string(s));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, Shape(s.begin(), s.end() - 2)));
  RECON_ASSIGN_OR_RETURN(Arg work, ctx.scratch(DType::kF32, s));
  Status st = gpu::ops::det(ctx.graph(), x, out, work);
  return st.is_ok() ? st : ctx.fail(st.message());
}

Status lrn(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  gpu::ops::LrnParams p;
  p.size = ctx.attr_int("size", 0);
  p.alpha = ctx.attr_float("alpha", 1e-4f);
  p.beta = ctx.attr_float("beta", 0.75f);
  p.bias = ctx.attr_float("bias", 1.0f);
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, x.shape()));
  Status st = gpu::ops::lrn(ctx.graph(), x, out, p);
  return st.is_ok() ? st : ctx.fail(st.message());
}

Status gemm(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg a, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(Arg b, ctx.float_input(1));
  if (a.shape().size() != 2 || b.shape().size() != 2) return ctx.fail("A and B must be 2-D");
  gpu::ops::MatmulOptions opt;
  opt.path = ctx.gemm_path();
  opt.transpose_a = ctx.attr_int("transA", 0) != 0;
  opt.transpose_b = ctx.attr_int("transB", 0) != 0;
  opt.alpha = ctx.attr_float("alpha", 1.0f);
  const float beta = ctx.attr_float("beta", 1.0f);
  const int64_t m = opt.transpose_a ? a.shape()[1] : a.shape()[0];
  const int64_t n = opt.transpose_b ? b.shape()[0] : b.shape()[1];
  std::optional<Arg> c;
  if (ctx.has_input(2) && beta != 0.0f) {
    RECON_ASSIGN_OR_RETURN(c, ctx.float_input(2));
  }
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, {m, n}));
  const gpu::ops::Activation act = fused_activation(ctx);
  if (!c || (beta == 1.0f && (c->shape() == Shape{n} || c->shape() == Shape{1, n}))) {
    if (c) {
      RECON_ASSIGN_OR_RETURN(Arg bias, gpu::ops::reshape_view(*c, {n}));
      opt.bias = bias;
    }
    opt.epilogue.activation = act;
    return gpu::ops::matmul(ctx.graph(), ctx.caps(), a, b, out, opt);
  }
  // C of another shape, or scaled: added after the product, and the activation after that.
  RECON_RETURN_IF_ERROR(gpu::ops::matmul(ctx.graph(), ctx.caps(), a, b, out, opt));
  Arg scaled = *c;
  if (beta != 1.0f) {
    RECON_ASSIGN_OR_RETURN(scaled, ctx.scratch(c->dtype(), c->shape()));
    RECON_RETURN_IF_ERROR(gpu::ops::scale_shift(ctx.graph(), *c, scaled, beta, 0.0f));
  }
  RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), gpu::ops::BinaryOp::kAdd, out, scaled, out));
  if (act == gpu::ops::Activation::kNone) return Status::ok();
  return gpu::ops::unary(ctx.graph(), as_unary(act), out, out);
}

Status matmul(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg a, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(Arg b, ctx.float_input(1));
  gpu::ops::MatmulOptions opt;
  opt.path = ctx.gemm_path();
  opt.epilogue.activation = fused_activation(ctx);
  if (ctx.has_input(kMatMulBiasInput)) {
    RECON_ASSIGN_OR_RETURN(opt.bias, ctx.float_input(kMatMulBiasInput));
  }
  return matmul_of(ctx, a, b, opt, [&ctx](const Shape& shape) { return ctx.new_output(0, ctx.input(0).type, shape); });
}

Status matmul_of(OpContext& ctx, const Arg& a, const Arg& b, const gpu::ops::MatmulOptions& opt,
                 const MakeOutput& make) {
  Shape sa = a.shape(), sb = b.shape();
  if (sa.empty() || sb.empty()) return ctx.fail("MatMul of a scalar");
  // NumPy promotion of 1-D operands: [K] is [1, K] on the left and [K, 1] on the right, and the
  // added axis is dropped from the result.
  const bool vec_a = sa.size() == 1, vec_b = sb.size() == 1;
  if (vec_a) sa.insert(sa.begin(), 1);
  if (vec_b) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k)
    return ctx.fail("inner dimensions differ: " + shape_string(sa) + " x " + shape_string(sb));
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  Result<Shape> batch =
      gpu::ops::broadcast_shape(batch_a.empty() ? Shape{1} : batch_a, batch_b.empty() ? Shape{1} : batch_b);
  if (!batch) return ctx.fail(batch.status().message());
  Shape out_shape = batch_a.empty() && batch_b.empty() ? Shape{} : *batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  Shape onnx_out = out_shape;
  if (vec_a) onnx_out.erase(onnx_out.end() - 2);
  if (vec_b) onnx_out.pop_back();
  RECON_ASSIGN_OR_RETURN(Arg out, make(onnx_out));
  const int64_t batches = shape_numel(out_shape) / (m * n);
  const int64_t na = shape_numel(batch_a), nb = shape_numel(batch_b);
  Arg a3 = a, b3 = b, c3 = out;
  if (nb == 1) {
    // B is one matrix: A's batch axes fold into its rows.
    RECON_ASSIGN_OR_RETURN(a3, gpu::ops::reshape_view(a, {na * m, k}));
    RECON_ASSIGN_OR_RETURN(b3, gpu::ops::reshape_view(b, {k, n}));
    RECON_ASSIGN_OR_RETURN(c3, gpu::ops::reshape_view(out, {batches * m, n}));
  } else if (na == 1 || na == nb) {
    // A is one matrix shared by every batch of B, or both have the same batches.
    if (nb != batches)
      return ctx.fail("batch broadcasting " + shape_string(sa) + " x " + shape_string(sb) + " is not supported");
    RECON_ASSIGN_OR_RETURN(a3, gpu::ops::reshape_view(a, na == 1 ? Shape{m, k} : Shape{na, m, k}));
    RECON_ASSIGN_OR_RETURN(b3, gpu::ops::reshape_view(b, {nb, k, n}));
    RECON_ASSIGN_OR_RETURN(c3, gpu::ops::reshape_view(out, {nb, m, n}));
  } else {
    return ctx.fail("batch broadcasting " + shape_string(sa) + " x " + shape_string(sb) + " is not supported");
  }
  return gpu::ops::matmul(ctx.graph(), ctx.caps(), a3, b3, c3, opt);
}

namespace {

using RowOp = Status (*)(Graph&, const Arg&, const Arg&);

// `row_op` along `axis` of x into out (x's shape): the last axis as rows, another moved last and back.
Status rows_along_axis(OpContext& ctx, RowOp row_op, const Arg& x, const Arg& out, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  if (axis == rank - 1) {
    const auto [rows, cols] = flatten_at(x.shape(), axis);
    RECON_ASSIGN_OR_RETURN(Arg x2, gpu::ops::reshape_view(x, {rows, cols}));
    RECON_ASSIGN_OR_RETURN(Arg out2, gpu::ops::reshape_view(out, {rows, cols}));
    return row_op(ctx.graph(), x2, out2);
  }
  std::vector<int> perm;
  for (int d = 0; d < rank; ++d) {
    if (d != axis) perm.push_back(d);
  }
  perm.push_back(static_cast<int>(axis));
  Shape moved;
  for (int d : perm) moved.push_back(x.shape()[static_cast<size_t>(d)]);
  std::vector<int> back(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) back[static_cast<size_t>(perm[static_cast<size_t>(d)])] = d;
  RECON_ASSIGN_OR_RETURN(Arg t, ctx.scratch(x.dtype(), moved));
  RECON_ASSIGN_OR_RETURN(Arg s, ctx.scratch(x.dtype(), moved));
  RECON_RETURN_IF_ERROR(gpu::ops::permute(ctx.graph(), x, t, perm));
  RECON_RETURN_IF_ERROR(row_op(ctx.graph(), t, s));
  return gpu::ops::permute(ctx.graph(), s, out, back);
}

// Softmax or LogSoftmax (`row_op`) along the node's axis.
Status softmax_along_axis(OpContext& ctx, RowOp row_op) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  int64_t axis = ctx.attr_int("axis", ctx.opset() >= 13 ? -1 : 1);
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, rank));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, x.shape()));
  if (ctx.opset() < 13) {
    // Before opset 13 the input is coerced to 2-D at `axis`: the op runs along that view's last axis.
    const auto [rows, cols] = flatten_at(x.shape(), axis);
    RECON_ASSIGN_OR_RETURN(x, gpu::ops::reshape_view(x, {rows, cols}));
    RECON_ASSIGN_OR_RETURN(out, gpu::ops::reshape_view(out, {rows, cols}));
    axis = 1;
  }
  return rows_along_axis(ctx, row_op, x, out, axis);
}

}  // namespace

Status log_softmax_along_axis(OpContext& ctx, const Arg& x, const Arg& out, int64_t axis) {
  return rows_along_axis(ctx, &gpu::ops::log_softmax, x, out, axis);
}

Status softmax(OpContext& ctx) {
  return softmax_along_axis(ctx, &gpu::ops::softmax);
}

Status log_softmax(OpContext& ctx) {
  return softmax_along_axis(ctx, &gpu::ops::log_softmax);
}

}  // namespace recon::gpu::onnx::ops_builders
