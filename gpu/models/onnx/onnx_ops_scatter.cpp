// ONNX ops that read or write at indices given as tensors: ScatterElements (and the deprecated
// Scatter, the same without a reduction), ScatterND, GatherND and MaxUnpool. Indices may be computed at run
// time (i32 on the device, as ONNX's int64 indices live there) or known at load (uploaded once); the
// op library's kernels (gpu/ops/scatter.h, gather_elements.h) do the work. With every input known
// on the host (constants, shape arithmetic) they fold there.
#include <string>

#include "gpu/models/onnx/onnx_fold.h"
#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/gather_elements.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/pad.h"
#include "gpu/ops/scatter.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

using gpu::ops::ScatterReduction;

// The reduction a node asks for, or none where it names one its opset lacks: add and mul from
// opset 16, max and min from 18.
Result<ScatterReduction> scatter_reduction_of(const Node& node, int64_t opset) {
  const Attribute* a = node.attribute("reduction");
  const std::string r = a != nullptr ? a->s : "none";
  if (r == "none") return ScatterReduction::kNone;
  if (opset >= 16 && r == "add") return ScatterReduction::kAdd;
  if (opset >= 16 && r == "mul") return ScatterReduction::kMul;
  if (opset >= 18 && r == "max") return ScatterReduction::kMax;
  if (opset >= 18 && r == "min") return ScatterReduction::kMin;
  return invalid_argument("reduction '" + r + "' at opset " + std::to_string(opset));
}

// Whether the node's inputs are all known on the host and its output small enough to fold.
bool folds(const OpContext& ctx, const Shape& out) {
  return ctx.all_inputs_on_host() && shape_numel(out) <= kMaxFoldElements;
}

// The operands both scatters take, checked before folding or recording: integer indices, updates
// of the data's type, no reduction of bool data.
Status check_scatter_operands(const OpContext& ctx) {
  const Value& d = ctx.input(0);
  if (device_dtype(ctx.input(1).type, DType::kF32) != DType::kI32) return ctx.fail("indices must be integers");
  RECON_ASSIGN_OR_RETURN(const ScatterReduction reduction, scatter_reduction_of(ctx.node(), ctx.opset()));
  if (d.type == ElemType::kBool && reduction != ScatterReduction::kNone) {
    return ctx.fail("a reduction of bool data is not supported");
  }
  // Sums and products of int8 to uint16 (i32 words on the device) could leave the type's range.
  if (narrow_int_bits(d.type) != 0 && (reduction == ScatterReduction::kAdd || reduction == ScatterReduction::kMul)) {
    return ctx.fail(std::string("an add or mul reduction of ") + elem_type_name(d.type) + " data is not supported");
  }
  if (ctx.input(2).type != d.type) return ctx.fail("updates must be of the data's type");
  return Status::ok();
}

// Data, indices and updates on the device, the output shaped as the data; `scatter` records the
// op library's kernel.
template <typename Scatter>
Status scatter_into(OpContext& ctx, const Scatter& scatter) {
  const Value& d = ctx.input(0);
  RECON_ASSIGN_OR_RETURN(const ScatterReduction reduction, scatter_reduction_of(ctx.node(), ctx.opset()));
  RECON_ASSIGN_OR_RETURN(Arg data, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg indices, ctx.device_input(1));
  RECON_ASSIGN_OR_RETURN(Arg updates, ctx.device_input(2));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, d.type, d.shape));
  const Status st = scatter(data, indices, updates, out, reduction);
  return st.is_ok() ? st : ctx.fail(st.message());
}

}  // namespace

std::string check_scatter(const Node& node, int64_t opset) {
  Result<ScatterReduction> r = scatter_reduction_of(node, opset);
  return r.is_ok() ? std::string{} : node.op_type + " " + r.status().message();
}

// ScatterElements (opset 11 on) and Scatter (9 and 10): along `axis`.
Status scatter_elements(OpContext& ctx) {
  int64_t axis = ctx.attr_int("axis", 0);
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, static_cast<int64_t>(ctx.input(0).shape.size())));
  RECON_RETURN_IF_ERROR(check_scatter_operands(ctx));
  if (folds(ctx, ctx.input(0).shape)) {
    return ctx.set_host_result(0, fold_scatter_elements(*ctx.input(0).host, *ctx.input(1).host, *ctx.input(2).host,
                                                        axis, ctx.attr_string("reduction", "none")));
  }
  return scatter_into(
      ctx, [&](const Arg& data, const Arg& indices, const Arg& updates, const Arg& out, ScatterReduction reduction) {
        return gpu::ops::scatter_elements(ctx.graph(), data, indices, updates, out, static_cast<int>(axis), reduction);
      });
}

Status scatter_nd(OpContext& ctx) {
  RECON_RETURN_IF_ERROR(check_scatter_operands(ctx));
  if (folds(ctx, ctx.input(0).shape)) {
    return ctx.set_host_result(0, fold_scatter_nd(*ctx.input(0).host, *ctx.input(1).host, *ctx.input(2).host,
                                                  ctx.attr_string("reduction", "none")));
  }
  return scatter_into(
      ctx, [&](const Arg& data, const Arg& indices, const Arg& updates, const Arg& out, ScatterReduction reduction) {
        return gpu::ops::scatter_nd(ctx.graph(), data, indices, updates, out, reduction);
      });
}

Status gather_nd(OpContext& ctx) {
  const Shape& s = ctx.input(0).shape;
  const Shape& is = ctx.input(1).shape;
  if (device_dtype(ctx.input(1).type, DType::kF32) != DType::kI32) return ctx.fail("indices must be integers");
  const int64_t b = ctx.attr_int("batch_dims", 0);
  if (is.empty() || b < 0 || is.back() < 1 || b + is.back() > static_cast<int64_t>(s.size())) {
    return ctx.fail("indices " + shape_string(is) + " with batch_dims " + std::to_string(b) + " do not address data " +
                    shape_string(s));
  }
  Shape out_shape(is.begin(), is.end() - 1);
  out_shape.insert(out_shape.end(), s.begin() + b + is.back(), s.end());
  if (folds(ctx, out_shape)) return ctx.set_host_result(0, fold_gather_nd(*ctx.input(0).host, *ctx.input(1).host, b));
  RECON_ASSIGN_OR_RETURN(Arg data, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg indices, ctx.device_input(1));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, out_shape));
  const Status st = gpu::ops::gather_nd(ctx.graph(), data, indices, out, static_cast<int>(b));
  return st.is_ok() ? st : ctx.fail(st.message());
}

namespace {

// MaxUnpool's unpooled shape: each spatial axis (in − 1)·stride − pads + kernel.
Result<Shape> unpooled_shape(OpContext& ctx, const Shape& in) {
  const std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  const size_t spatial = in.size() - 2;
  const std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial) {
    return ctx.fail("kernel_shape, strides and pads must cover the spatial axes");
  }
  Shape out{in[0], in[1]};
  for (size_t d = 0; d < spatial; ++d) {
    out.push_back((in[d + 2] - 1) * strides[d] - pads[d] - pads[d + spatial] + kernel[d]);
    if (out.back() < 1) return ctx.fail("an unpooled shape of " + shape_string(out));
  }
  return out;
}

// output_shape where given (known at load; at least the unpooled shape), else the unpooled shape.
Result<Shape> output_shape_of(OpContext& ctx, const Shape& unpooled) {
  if (!ctx.has_input(2)) return unpooled;
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.host_ints(2));
  bool covers = dims.size() == unpooled.size();
  for (size_t d = 0; covers && d < dims.size(); ++d) covers = dims[d] >= unpooled[d];
  if (!covers) return ctx.fail("output_shape must hold the unpooled shape " + shape_string(unpooled));
  return Shape(dims.begin(), dims.end());
}

}  // namespace

// MaxUnpool as the ONNX reference computes it: zeros of the unpooled shape with X written where
// its indices (MaxPool's, flat over that shape) point, a scatter over the flattened tensor, then
// padded with zeros at the end of each axis up to output_shape (ONNX Runtime indexes the
// output_shape instead: onnx/onnx#2398).
Status max_unpool(OpContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  if (in.size() < 3 || ctx.input(1).shape != in) return ctx.fail("X and I must be [N, C, spatial...] of one shape");
  if (device_dtype(ctx.input(1).type, DType::kF32) != DType::kI32) return ctx.fail("I must be integers");
  RECON_ASSIGN_OR_RETURN(Shape unpooled, unpooled_shape(ctx, in));
  RECON_ASSIGN_OR_RETURN(Shape shape, output_shape_of(ctx, unpooled));
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(Arg indices, ctx.device_input(1));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, shape));
  const int64_t n = shape_numel(unpooled);
  RECON_ASSIGN_OR_RETURN(Arg zeros, ctx.scratch(x.dtype(), {n}));
  RECON_RETURN_IF_ERROR(gpu::ops::fill(ctx.graph(), zeros, 0.0f));
  Arg scattered = out;
  if (shape != unpooled) {
    RECON_ASSIGN_OR_RETURN(scattered, ctx.scratch(x.dtype(), unpooled));
  }
  RECON_ASSIGN_OR_RETURN(Arg flat_scattered, gpu::ops::reshape_view(scattered, {n}));
  RECON_ASSIGN_OR_RETURN(Arg flat_x, gpu::ops::reshape_view(x, {x.numel()}));
  RECON_ASSIGN_OR_RETURN(Arg flat_indices, gpu::ops::reshape_view(indices, {indices.numel()}));
  RECON_RETURN_IF_ERROR(gpu::ops::scatter_elements(ctx.graph(), zeros, flat_indices, flat_x, flat_scattered, 0));
  if (shape == unpooled) return Status::ok();
  return gpu::ops::pad(ctx.graph(), scattered, out, std::vector<int64_t>(shape.size(), 0),
                       gpu::ops::PadMode::kConstant);
}

}  // namespace recon::gpu::onnx::ops_builders
