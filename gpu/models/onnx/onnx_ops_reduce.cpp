// ONNX reductions: ReduceSum/Mean/Max/Min, the composite ones (L1, L2, SumSquare, LogSum,
// LogSumExp: an elementwise map, the sums, a map of the result), ArgMax/ArgMin, TopK and CumSum
// (running sums). Several
// axes reduce one after another (each keeps its axis as 1, so the remaining axis numbers stay
// valid), then keepdims = 0 drops them in a view.
#include <algorithm>
#include <string>
#include <utility>

#include "gpu/models/onnx/onnx_fold.h"
#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/cast.h"
#include "gpu/ops/cumsum.h"
#include "gpu/ops/elementwise.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/one_hot.h"
#include "gpu/ops/reduce.h"
#include "gpu/ops/topk.h"
#include "gpu/ops/unary.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

using gpu::ops::BinaryOp;
using gpu::ops::ReduceOp;
using gpu::ops::UnaryOp;

struct ReducePlan {
  std::vector<int64_t> axes;  // sorted, unique; empty: nothing is reduced (noop_with_empty_axes)
  Shape kept;                 // the input's shape with the reduced axes as 1
  Shape out_shape;            // the ONNX output's shape (keepdims applied)
};

Result<ReducePlan> plan_reduce(OpContext& ctx, const Shape& in, int64_t axes_input_since) {
  const int64_t rank = static_cast<int64_t>(in.size());
  ReducePlan plan;
  if (ctx.opset() >= axes_input_since) {
    if (ctx.has_input(1)) {
      RECON_ASSIGN_OR_RETURN(plan.axes, ctx.host_ints(1));
    }
  } else {
    plan.axes = ctx.attr_ints("axes");
  }
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  if (plan.axes.empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0) {
      plan.kept = plan.out_shape = in;
      return plan;
    }
    for (int64_t d = 0; d < rank; ++d) plan.axes.push_back(d);
  }
  for (int64_t& a : plan.axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return ctx.fail("axis out of range");
  }
  std::sort(plan.axes.begin(), plan.axes.end());
  plan.axes.erase(std::unique(plan.axes.begin(), plan.axes.end()), plan.axes.end());
  plan.kept = in;
  for (int64_t a : plan.axes) plan.kept[static_cast<size_t>(a)] = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (keepdims || !std::binary_search(plan.axes.begin(), plan.axes.end(), d)) {
      plan.out_shape.push_back(plan.kept[static_cast<size_t>(d)]);
    }
  }
  return plan;
}

// Reduces x over the plan's axes into dst (of the plan's kept shape), one axis after another.
Status reduce_axes(OpContext& ctx, ReduceOp op, const Arg& x, const ReducePlan& plan, const Arg& dst) {
  Arg cur = x;
  Shape cur_shape = x.shape();
  for (size_t i = 0; i < plan.axes.size(); ++i) {
    cur_shape[static_cast<size_t>(plan.axes[i])] = 1;
    Arg next = dst;
    if (i + 1 < plan.axes.size()) {
      RECON_ASSIGN_OR_RETURN(next, ctx.scratch(x.dtype(), cur_shape));
    }
    RECON_RETURN_IF_ERROR(gpu::ops::reduce(ctx.graph(), op, cur, next, static_cast<int>(plan.axes[i])));
    cur = next;
  }
  return Status::ok();
}

Status reduce_op(OpContext& ctx, ReduceOp op, int64_t axes_input_since) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(ReducePlan plan, plan_reduce(ctx, x.shape(), axes_input_since));
  if (plan.axes.empty()) return ctx.set_view_output(0, 0, x.shape());
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, plan.out_shape));
  RECON_ASSIGN_OR_RETURN(Arg out_kept, gpu::ops::reshape_view(out, plan.kept));
  return reduce_axes(ctx, op, x, plan, out_kept);
}

// f_after(Σ f_before(x)) over the axes: L1 (|x|), SumSquare (x²), L2 (√Σx²), LogSum (log Σx).
// Squares are formed and summed in fp32 under fp16 storage: an fp16 square overflows above 256.
enum class Before { kNone, kAbs, kSquare };
Status composite_sum(OpContext& ctx, Before before, UnaryOp after) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(ReducePlan plan, plan_reduce(ctx, x.shape(), 18));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, plan.out_shape));
  RECON_ASSIGN_OR_RETURN(Arg out_kept, gpu::ops::reshape_view(out, plan.kept));
  const DType work = before == Before::kSquare ? DType::kF32 : x.dtype();
  Arg src = x;
  if (work != x.dtype()) {
    RECON_ASSIGN_OR_RETURN(src, ctx.scratch(work, x.shape()));
    RECON_RETURN_IF_ERROR(gpu::ops::cast(ctx.graph(), x, src));
  }
  // The sums land in the output unless they are in another dtype than it.
  Arg result = out_kept;
  if (work != out.dtype()) {
    RECON_ASSIGN_OR_RETURN(result, ctx.scratch(work, plan.kept));
  }
  Arg mapped = src;
  if (before != Before::kNone) {
    // Without axes to reduce, the map writes the result itself.
    if (plan.axes.empty()) {
      mapped = result;
    } else {
      RECON_ASSIGN_OR_RETURN(mapped, ctx.scratch(work, x.shape()));
    }
    RECON_RETURN_IF_ERROR(before == Before::kAbs ? gpu::ops::unary(ctx.graph(), UnaryOp::kAbs, src, mapped)
                                                 : gpu::ops::binary(ctx.graph(), BinaryOp::kMul, src, src, mapped));
  }
  if (!plan.axes.empty()) {
    RECON_RETURN_IF_ERROR(reduce_axes(ctx, ReduceOp::kSum, mapped, plan, result));
  } else if (before == Before::kNone) {
    RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), UnaryOp::kIdentity, src, result));
  }
  if (after != UnaryOp::kIdentity) {
    RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), after, result, result));
  }
  if (result.dtype() == out_kept.dtype()) return Status::ok();
  return gpu::ops::cast(ctx.graph(), result, out_kept);
}

Status arg_reduce(OpContext& ctx, bool max) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  int64_t axis = ctx.attr_int("axis", 0);
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, rank));
  Shape kept = x.shape(), out_shape = x.shape();
  kept[static_cast<size_t>(axis)] = 1;
  if (ctx.attr_int("keepdims", 1) != 0) {
    out_shape = kept;
  } else {
    out_shape.erase(out_shape.begin() + axis);
  }
  const bool last = ctx.attr_int("select_last_index", 0) != 0;
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ElemType::kInt64, out_shape));
  RECON_ASSIGN_OR_RETURN(Arg out_kept, gpu::ops::reshape_view(out, kept));
  const int a = static_cast<int>(axis);
  return max ? gpu::ops::argmax(ctx.graph(), x, out_kept, a, last)
             : gpu::ops::argmin(ctx.graph(), x, out_kept, a, last);
}

}  // namespace

// The one-hot row of the first maximum along the axis (from opset 13; before it, of the input
// flattened to 2-D at the axis): argmax, then ops::one_hot.
Status hardmax(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const Shape& in = x.shape();
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.attr_int("axis", ctx.opset() >= 13 ? -1 : 1);
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, rank));
  Shape view = in;  // [.., len, ..]: the one axis the maximum is taken along
  if (ctx.opset() < 13) {
    int64_t outer = 1, rest = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : rest) *= in[static_cast<size_t>(d)];
    view = {outer, rest};
    axis = 1;
  }
  RECON_ASSIGN_OR_RETURN(Arg x_view, gpu::ops::reshape_view(x, view));
  Shape kept = view;
  kept[static_cast<size_t>(axis)] = 1;
  RECON_ASSIGN_OR_RETURN(Arg index, ctx.scratch(DType::kI32, kept));
  RECON_RETURN_IF_ERROR(gpu::ops::argmax(ctx.graph(), x_view, index, static_cast<int>(axis)));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, in));
  RECON_ASSIGN_OR_RETURN(Arg out_view, gpu::ops::reshape_view(out, view));
  return gpu::ops::one_hot(ctx.graph(), index, out_view, static_cast<int>(axis));
}

// One-hot rows of `depth` along `axis` for every index (negative from the end, out of range: all
// off), values = [off, on]. Folded where the indices are known; on the device otherwise (float
// indices truncated toward zero first).
Status one_hot(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(const HostTensor* depth_t, ctx.host_input(1));
  RECON_ASSIGN_OR_RETURN(const HostTensor* values_t, ctx.host_input(2));
  RECON_ASSIGN_OR_RETURN(std::vector<double> depth_v, host_doubles(*depth_t));
  RECON_ASSIGN_OR_RETURN(std::vector<double> values, host_doubles(*values_t));
  if (depth_v.size() != 1 || values.size() != 2) return ctx.fail("depth must hold one value and values two");
  const auto depth = static_cast<int64_t>(depth_v[0]);
  if (depth < 1 || depth > (int64_t{1} << 24)) return ctx.fail("depth must be from 1 to 2^24");
  const Value& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.shape.size()) + 1;
  int64_t axis = ctx.attr_int("axis", -1);
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, rank));
  Shape out_shape = in.shape;
  out_shape.insert(out_shape.begin() + axis, depth);
  if (in.is_host()) {
    RECON_ASSIGN_OR_RETURN(std::vector<double> idx, host_doubles(*in.host));
    if (shape_numel(out_shape) > kMaxFoldElements) return ctx.fail("a folded OneHot of more than 2^26 elements");
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
    std::vector<double> y(static_cast<size_t>(shape_numel(out_shape)), values[0]);
    for (size_t i = 0; i < idx.size(); ++i) {
      auto k = static_cast<int64_t>(idx[i]);  // ONNX casts the indices to integers
      if (k < 0) k += depth;
      if (k < 0 || k >= depth) continue;
      const int64_t o = static_cast<int64_t>(i) / inner, r = static_cast<int64_t>(i) % inner;
      y[static_cast<size_t>((o * depth + k) * inner + r)] = values[1];
    }
    Result<HostTensor> t = make_tensor(values_t->type, out_shape, y);
    if (!t) return ctx.fail(t.status().message());
    ctx.set_host_output(0, std::move(*t));
    return Status::ok();
  }
  if (!is_floating(values_t->type)) return ctx.fail("on the device OneHot writes float or float16 values");
  RECON_ASSIGN_OR_RETURN(Arg indices, ctx.device_input(0));
  if (is_floating(in.type)) {  // cast to integers, truncating toward zero as the folded path does
    RECON_ASSIGN_OR_RETURN(Arg whole, ctx.scratch(DType::kI32, in.shape));
    RECON_RETURN_IF_ERROR(gpu::ops::cast(ctx.graph(), indices, whole));
    indices = whole;
  }
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, values_t->type, out_shape));
  return gpu::ops::one_hot(ctx.graph(), indices, out, static_cast<int>(axis), static_cast<float>(values[1]),
                           static_cast<float>(values[0]));
}

Status reduce_sum(OpContext& ctx) {
  return reduce_op(ctx, ReduceOp::kSum, 13);
}
Status reduce_mean(OpContext& ctx) {
  return reduce_op(ctx, ReduceOp::kMean, 18);
}
Status reduce_max(OpContext& ctx) {
  return reduce_op(ctx, ReduceOp::kMax, 18);
}
Status reduce_min(OpContext& ctx) {
  return reduce_op(ctx, ReduceOp::kMin, 18);
}
Status reduce_prod(OpContext& ctx) {
  return reduce_op(ctx, ReduceOp::kProd, 18);
}
Status reduce_l1(OpContext& ctx) {
  return composite_sum(ctx, Before::kAbs, UnaryOp::kIdentity);
}
Status reduce_l2(OpContext& ctx) {
  return composite_sum(ctx, Before::kSquare, UnaryOp::kSqrt);
}
Status reduce_sum_square(OpContext& ctx) {
  return composite_sum(ctx, Before::kSquare, UnaryOp::kIdentity);
}
Status reduce_log_sum(OpContext& ctx) {
  return composite_sum(ctx, Before::kNone, UnaryOp::kLog);
}

// log Σ exp(x) = m + log Σ exp(x − m) with m the maximum over the axes, so large inputs do not
// overflow.
Status reduce_log_sum_exp(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(ReducePlan plan, plan_reduce(ctx, x.shape(), 18));
  if (plan.axes.empty()) return ctx.set_view_output(0, 0, x.shape());  // log(exp(x)) = x
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, plan.out_shape));
  RECON_ASSIGN_OR_RETURN(Arg out_kept, gpu::ops::reshape_view(out, plan.kept));
  RECON_ASSIGN_OR_RETURN(Arg m, ctx.scratch(x.dtype(), plan.kept));
  RECON_RETURN_IF_ERROR(reduce_axes(ctx, ReduceOp::kMax, x, plan, m));
  RECON_ASSIGN_OR_RETURN(Arg shifted, ctx.scratch(x.dtype(), x.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), BinaryOp::kSub, x, m, shifted));
  RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), UnaryOp::kExp, shifted, shifted));
  RECON_RETURN_IF_ERROR(reduce_axes(ctx, ReduceOp::kSum, shifted, plan, out_kept));
  RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), UnaryOp::kLog, out_kept, out_kept));
  return gpu::ops::binary(ctx.graph(), BinaryOp::kAdd, out_kept, m, out_kept);
}

// The axes MeanVarianceNormalization normalises over (default [0, 2, 3]) as a plan keeping them.
Result<ReducePlan> plan_mvn(OpContext& ctx, const Shape& in) {
  ReducePlan plan;
  plan.axes = ctx.attr_ints("axes", {0, 2, 3});
  for (int64_t& a : plan.axes) RECON_RETURN_IF_ERROR(ctx.normalise_axis(a, static_cast<int64_t>(in.size())));
  std::sort(plan.axes.begin(), plan.axes.end());
  plan.axes.erase(std::unique(plan.axes.begin(), plan.axes.end()), plan.axes.end());
  plan.kept = in;
  for (int64_t a : plan.axes) plan.kept[static_cast<size_t>(a)] = 1;
  plan.out_shape = in;
  return plan;
}

// (x − E[x]) / (√E[(x − E[x])²] + 1e-9) over the axes, in fp32 under fp16 storage too (the
// variance's squares). The 1e-9 is ONNX's function body's, which makes a constant slice 0.
Status mean_variance_normalization(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(ReducePlan plan, plan_mvn(ctx, x.shape()));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, x.shape()));
  Graph& g = ctx.graph();
  Arg xf = x;
  Arg result = out;
  if (x.dtype() != DType::kF32) {
    RECON_ASSIGN_OR_RETURN(xf, ctx.scratch(DType::kF32, x.shape()));
    RECON_RETURN_IF_ERROR(gpu::ops::cast(g, x, xf));
    RECON_ASSIGN_OR_RETURN(result, ctx.scratch(DType::kF32, x.shape()));
  }
  RECON_ASSIGN_OR_RETURN(Arg mean, ctx.scratch(DType::kF32, plan.kept));
  RECON_RETURN_IF_ERROR(reduce_axes(ctx, ReduceOp::kMean, xf, plan, mean));
  RECON_ASSIGN_OR_RETURN(Arg centered, ctx.scratch(DType::kF32, x.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::binary(g, BinaryOp::kSub, xf, mean, centered));
  RECON_RETURN_IF_ERROR(gpu::ops::binary(g, BinaryOp::kMul, centered, centered, result));
  RECON_ASSIGN_OR_RETURN(Arg std_dev, ctx.scratch(DType::kF32, plan.kept));
  RECON_RETURN_IF_ERROR(reduce_axes(ctx, ReduceOp::kMean, result, plan, std_dev));
  RECON_RETURN_IF_ERROR(gpu::ops::unary(g, UnaryOp::kSqrt, std_dev, std_dev));
  RECON_RETURN_IF_ERROR(gpu::ops::unary(g, UnaryOp::kIdentity, std_dev, std_dev, 1.0f, 1e-9f));
  RECON_RETURN_IF_ERROR(gpu::ops::binary(g, BinaryOp::kDiv, centered, std_dev, result));
  return result.dtype() == out.dtype() ? Status::ok() : gpu::ops::cast(g, result, out);
}

Status argmax(OpContext& ctx) {
  return arg_reduce(ctx, true);
}
Status argmin(OpContext& ctx) {
  return arg_reduce(ctx, false);
}

// TopK along any axis: ops::topk works on the last, so another axis is moved there and back.
Status top_k(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  int64_t k = 0;
  if (ctx.opset() < 10) {
    k = ctx.attr_int("k", 0);
  } else {
    RECON_ASSIGN_OR_RETURN(std::vector<int64_t> kv, ctx.host_ints(1));
    if (kv.size() != 1) return ctx.fail("K must hold one value");
    k = kv[0];
  }
  int64_t axis = ctx.attr_int("axis", -1);
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, rank));
  const int64_t n = x.shape()[static_cast<size_t>(axis)];
  if (k < 1 || k > n || k > gpu::ops::kMaxTopK) {
    return ctx.fail("K = " + std::to_string(k) + " must be in [1, min(" + std::to_string(n) + ", " +
                    std::to_string(gpu::ops::kMaxTopK) + ")]");
  }
  const bool largest = ctx.attr_int("largest", 1) != 0;  // `sorted` = 0 allows any order; sorted is one
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = k;
  RECON_ASSIGN_OR_RETURN(Arg values, ctx.new_output(0, ctx.input(0).type, out_shape));
  RECON_ASSIGN_OR_RETURN(Arg indices, ctx.new_output(1, ElemType::kInt64, out_shape));
  if (axis == rank - 1) return gpu::ops::topk(ctx.graph(), x, values, indices, k, largest);
  std::vector<int> perm;
  for (int d = 0; d < rank; ++d) {
    if (d != axis) perm.push_back(d);
  }
  perm.push_back(static_cast<int>(axis));
  std::vector<int> back(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) back[static_cast<size_t>(perm[static_cast<size_t>(d)])] = d;
  Shape moved, moved_out;
  for (int d : perm) {
    moved.push_back(x.shape()[static_cast<size_t>(d)]);
    moved_out.push_back(out_shape[static_cast<size_t>(d)]);
  }
  RECON_ASSIGN_OR_RETURN(Arg t, ctx.scratch(x.dtype(), moved));
  RECON_ASSIGN_OR_RETURN(Arg tv, ctx.scratch(x.dtype(), moved_out));
  RECON_ASSIGN_OR_RETURN(Arg ti, ctx.scratch(DType::kI32, moved_out));
  RECON_RETURN_IF_ERROR(gpu::ops::permute(ctx.graph(), x, t, perm));
  RECON_RETURN_IF_ERROR(gpu::ops::topk(ctx.graph(), t, tv, ti, k, largest));
  RECON_RETURN_IF_ERROR(gpu::ops::permute(ctx.graph(), tv, values, back));
  return gpu::ops::permute(ctx.graph(), ti, indices, back);
}

// CumSum: the axis is an input, which must be known when compiling (a constant or a shape tensor);
// an input known on the host folds.
Status cumsum(OpContext& ctx) {
  const Value& in = ctx.input(0);
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.host_ints(1));
  if (axes.size() != 1) return ctx.fail("axis must hold one value");
  int64_t axis = axes[0];
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, static_cast<int64_t>(in.shape.size())));
  if (in.type == ElemType::kBool || narrow_int_bits(in.type) != 0) {
    return ctx.fail(std::string("CumSum of ") + elem_type_name(in.type) + " is not an ONNX op");
  }
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0, reverse = ctx.attr_int("reverse", 0) != 0;
  if (in.is_host() && in.host->numel() <= kMaxFoldElements) {
    return ctx.set_host_result(0, fold_cumsum(*in.host, axis, exclusive, reverse));
  }
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, in.type, in.shape));
  const Status st = gpu::ops::cumsum(ctx.graph(), x, out, static_cast<int>(axis), exclusive, reverse);
  return st.is_ok() ? st : ctx.fail(st.message());
}

}  // namespace recon::gpu::onnx::ops_builders
