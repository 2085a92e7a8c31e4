// ONNX ReduceSum/Mean/Max/Min: several axes reduce one after another (each keeps its axis as 1,
// so the remaining axis numbers stay valid), then keepdims = 0 drops them in a view.
#include <algorithm>
#include <string>

#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/reduce.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

Status reduce_op(OpContext& ctx, gpu::ops::ReduceOp op, int64_t axes_input_since) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  std::vector<int64_t> axes;
  if (ctx.opset() >= axes_input_since) {
    if (ctx.has_input(1)) {
      RECON_ASSIGN_OR_RETURN(axes, ctx.host_ints(1));
    }
  } else {
    axes = ctx.attr_ints("axes");
  }
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  if (axes.empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0) return ctx.set_view_output(0, 0, x.shape());
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return ctx.fail("axis out of range");
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Shape kept = x.shape();
  for (int64_t a : axes) kept[static_cast<size_t>(a)] = 1;
  Shape out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (keepdims || !std::binary_search(axes.begin(), axes.end(), d)) out_shape.push_back(kept[static_cast<size_t>(d)]);
  }
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, out_shape));
  RECON_ASSIGN_OR_RETURN(Arg out_kept, gpu::ops::reshape_view(out, kept));
  Arg cur = x;
  Shape cur_shape = x.shape();
  for (size_t i = 0; i < axes.size(); ++i) {
    cur_shape[static_cast<size_t>(axes[i])] = 1;
    Arg next = out_kept;
    if (i + 1 < axes.size()) {
      RECON_ASSIGN_OR_RETURN(next, ctx.scratch(x.dtype(), cur_shape));
    }
    RECON_RETURN_IF_ERROR(gpu::ops::reduce(ctx.graph(), op, cur, next, static_cast<int>(axes[i])));
    cur = next;
  }
  return Status::ok();
}

}  // namespace

Status reduce_sum(OpContext& ctx) {
  return reduce_op(ctx, gpu::ops::ReduceOp::kSum, 13);
}
Status reduce_mean(OpContext& ctx) {
  return reduce_op(ctx, gpu::ops::ReduceOp::kMean, 18);
}
Status reduce_max(OpContext& ctx) {
  return reduce_op(ctx, gpu::ops::ReduceOp::kMax, 18);
}
Status reduce_min(OpContext& ctx) {
  return reduce_op(ctx, gpu::ops::ReduceOp::kMin, 18);
}

}  // namespace recon::gpu::onnx::ops_builders
