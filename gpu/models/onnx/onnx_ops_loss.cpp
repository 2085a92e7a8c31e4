// ONNX's losses, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12-18), composed
// from the op library: LogSoftmax along the class axis, a gather of each target's log-probability
// and of its class weight, a comparison and Where for ignore_index, and the reduction. The input
// [N, C, d1...dk] is viewed as [N, C, D] and the targets [N, d1...dk] as [N, D]; nothing is copied
// to the host.
#include <optional>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/elementwise.h"
#include "gpu/ops/gather_elements.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/reduce.h"
#include "gpu/ops/unary.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

using gpu::ops::BinaryOp;
using gpu::ops::ReduceOp;

// Both ops read their targets and optional class weights at the same positions.
constexpr size_t kTargetInput = 1;
constexpr size_t kWeightInput = 2;

enum class Reduction { kNone, kSum, kMean };

std::optional<Reduction> reduction_named(const std::string& name) {
  if (name == "none") return Reduction::kNone;
  if (name == "sum") return Reduction::kSum;
  if (name == "mean") return Reduction::kMean;
  return std::nullopt;
}

// The input [N, C, d1...dk] as [N, C, D], and the targets' shape [N, d1...dk].
struct LossShape {
  int64_t n = 0, c = 0, d = 0;
  Shape target;
};

Result<LossShape> loss_shape(OpContext& ctx, const Shape& input, const Shape& target) {
  if (input.size() < 2) return ctx.fail("the input must be [N, C, d1...], is " + shape_string(input));
  Shape want{input[0]};
  want.insert(want.end(), input.begin() + 2, input.end());
  if (target != want) {
    return ctx.fail("the target must be " + shape_string(want) + " for an input " + shape_string(input) + ", is " +
                    shape_string(target));
  }
  return LossShape{input[0], input[1], shape_numel(want) / input[0], want};
}

// A scalar constant on the device (the ignored index, zero, one) in `type`'s device dtype.
Result<Arg> device_scalar(OpContext& ctx, ElemType type, double value) {
  Result<HostTensor> t = make_tensor(type, {}, std::vector<double>{value});
  if (!t) return ctx.fail(t.status().message());
  Result<Arg> a = upload_host_tensor(ctx.runtime(), std::move(*t), ctx.float_dtype());
  if (!a) return ctx.fail(a.status().message());
  return *a;
}

// The targets as [N, D] class indices (i32 on the device).
Result<Arg> class_indices(OpContext& ctx, const LossShape& s) {
  const ElemType type = ctx.input(kTargetInput).type;
  if (type != ElemType::kInt32 && type != ElemType::kInt64) {
    return ctx.fail(std::string("the target is ") + elem_type_name(type) + "; class indices are int32 or int64");
  }
  RECON_ASSIGN_OR_RETURN(Arg target, ctx.device_input(kTargetInput));
  return gpu::ops::reshape_view(target, {s.n, s.d});
}

// log_prob[n, target[n, d], d] as [N, D].
Result<Arg> picked_log_prob(OpContext& ctx, const Arg& log_prob, const Arg& target, const LossShape& s) {
  RECON_ASSIGN_OR_RETURN(Arg log_prob3, gpu::ops::reshape_view(log_prob, {s.n, s.c, s.d}));
  RECON_ASSIGN_OR_RETURN(Arg target3, gpu::ops::reshape_view(target, {s.n, 1, s.d}));
  RECON_ASSIGN_OR_RETURN(Arg picked, ctx.scratch(log_prob.dtype(), {s.n, 1, s.d}));
  RECON_RETURN_IF_ERROR(gpu::ops::gather_elements(ctx.graph(), log_prob3, target3, picked, 1));
  return gpu::ops::reshape_view(picked, {s.n, s.d});
}

// weight[target[n, d]] as [N, D], or nothing when the node has no weights.
Result<std::optional<Arg>> target_weights(OpContext& ctx, const Arg& target, const LossShape& s) {
  if (!ctx.has_input(kWeightInput)) return std::optional<Arg>{};
  RECON_ASSIGN_OR_RETURN(Arg weight, ctx.float_input(kWeightInput));
  if (weight.shape() != Shape{s.c}) {
    return ctx.fail("the weights must be [" + std::to_string(s.c) + "], are " + shape_string(weight.shape()));
  }
  RECON_ASSIGN_OR_RETURN(Arg gathered, ctx.scratch(weight.dtype(), target.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::gather(ctx.graph(), weight, target, gathered, 0));
  return std::optional<Arg>{gathered};
}

// Booleans [N, D], true where the target is ignore_index; nothing when the node sets none. An
// ignored target outside [0, C) reads an edge class in the gathers, whose value the mask drops.
Result<std::optional<Arg>> ignored_targets(OpContext& ctx, const Arg& target) {
  if (!ctx.has_attr("ignore_index")) return std::optional<Arg>{};
  RECON_ASSIGN_OR_RETURN(Arg index, device_scalar(ctx, ElemType::kInt64, double(ctx.attr_int("ignore_index", 0))));
  RECON_ASSIGN_OR_RETURN(Arg ignored, ctx.scratch(DType::kI32, target.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), BinaryOp::kEqual, target, index, ignored));
  return std::optional<Arg>{ignored};
}

// out [N, D] = −picked · weight, 0 where the target is ignored (selected, so an infinite
// log-probability of an ignored target does not turn into NaN).
Status element_losses(OpContext& ctx, const Arg& picked, const std::optional<Arg>& weights,
                      const std::optional<Arg>& ignored, const Arg& out) {
  Arg weighed = out;
  if (ignored) {
    RECON_ASSIGN_OR_RETURN(weighed, ctx.scratch(out.dtype(), out.shape()));
  }
  if (weights) {
    RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), BinaryOp::kMul, picked, *weights, weighed));
    RECON_RETURN_IF_ERROR(gpu::ops::scale_shift(ctx.graph(), weighed, weighed, -1.0f, 0.0f));
  } else {
    RECON_RETURN_IF_ERROR(gpu::ops::scale_shift(ctx.graph(), picked, weighed, -1.0f, 0.0f));
  }
  if (!ignored) return Status::ok();
  RECON_ASSIGN_OR_RETURN(Arg zero, device_scalar(ctx, ElemType::kFloat, 0.0));
  return gpu::ops::where(ctx.graph(), *ignored, zero, weighed, out);
}

// out [1, 1] = the sum or mean of every element of x.
Status reduce_all(OpContext& ctx, ReduceOp op, const Arg& x, const Arg& out) {
  RECON_ASSIGN_OR_RETURN(Arg row, gpu::ops::reshape_view(x, {1, x.numel()}));
  return gpu::ops::reduce(ctx.graph(), op, row, out, 1);
}

// out [1, 1] = Σ losses / Σ applied weights: each target's class weight (1 without weights), 0
// where it is ignored. Taken as the quotient of the two means, which is the same and, unlike the
// sums of many targets, cannot overflow fp16 storage.
Status weighted_mean(OpContext& ctx, const Arg& losses, const std::optional<Arg>& weights,
                     const std::optional<Arg>& ignored, const Arg& out) {
  std::optional<Arg> applied = weights;
  if (ignored) {
    RECON_ASSIGN_OR_RETURN(Arg zero, device_scalar(ctx, ElemType::kFloat, 0.0));
    RECON_ASSIGN_OR_RETURN(const Arg kept, weights ? Result<Arg>(*weights) : device_scalar(ctx, ElemType::kFloat, 1.0));
    RECON_ASSIGN_OR_RETURN(applied, ctx.scratch(losses.dtype(), losses.shape()));
    RECON_RETURN_IF_ERROR(gpu::ops::where(ctx.graph(), *ignored, zero, kept, *applied));
  }
  RECON_ASSIGN_OR_RETURN(Arg loss_mean, ctx.scratch(out.dtype(), {1, 1}));
  RECON_ASSIGN_OR_RETURN(Arg weight_mean, ctx.scratch(out.dtype(), {1, 1}));
  RECON_RETURN_IF_ERROR(reduce_all(ctx, ReduceOp::kMean, losses, loss_mean));
  RECON_RETURN_IF_ERROR(reduce_all(ctx, ReduceOp::kMean, *applied, weight_mean));
  return gpu::ops::binary(ctx.graph(), BinaryOp::kDiv, loss_mean, weight_mean, out);
}

// NegativeLogLikelihoodLoss of log_prob [N, C, d1...dk] into output 0: the element losses
// [N, d1...dk] (reduction none), their sum, or their mean weighted by the applied weights.
Status negative_log_likelihood(OpContext& ctx, const Arg& log_prob) {
  RECON_ASSIGN_OR_RETURN(const LossShape s, loss_shape(ctx, log_prob.shape(), ctx.input(kTargetInput).shape));
  const std::optional<Reduction> reduction = reduction_named(ctx.attr_string("reduction", "mean"));
  if (!reduction) return ctx.fail("unknown reduction");
  RECON_ASSIGN_OR_RETURN(const Arg target, class_indices(ctx, s));
  RECON_ASSIGN_OR_RETURN(const Arg picked, picked_log_prob(ctx, log_prob, target, s));
  RECON_ASSIGN_OR_RETURN(const std::optional<Arg> weights, target_weights(ctx, target, s));
  RECON_ASSIGN_OR_RETURN(const std::optional<Arg> ignored, ignored_targets(ctx, target));
  const ElemType type = ctx.input(0).type;
  if (*reduction == Reduction::kNone) {
    RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, type, s.target));
    RECON_ASSIGN_OR_RETURN(Arg out2, gpu::ops::reshape_view(out, {s.n, s.d}));
    return element_losses(ctx, picked, weights, ignored, out2);
  }
  RECON_ASSIGN_OR_RETURN(Arg losses, ctx.scratch(picked.dtype(), {s.n, s.d}));
  RECON_RETURN_IF_ERROR(element_losses(ctx, picked, weights, ignored, losses));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, type, {}));
  RECON_ASSIGN_OR_RETURN(Arg total, gpu::ops::reshape_view(out, {1, 1}));
  if (*reduction == Reduction::kSum) return reduce_all(ctx, ReduceOp::kSum, losses, total);
  if (!weights && !ignored) return reduce_all(ctx, ReduceOp::kMean, losses, total);
  return weighted_mean(ctx, losses, weights, ignored, total);
}

}  // namespace

std::string check_loss(const Node& node, int64_t) {
  const Attribute* r = node.attribute("reduction");
  if (r == nullptr || reduction_named(r->s)) return {};
  return "reduction '" + r->s + "' (ONNX defines none, sum and mean)";
}

Status negative_log_likelihood_loss(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(const Arg input, ctx.float_input(0));
  return negative_log_likelihood(ctx, input);
}

// LogSoftmax of the scores along the class axis (into output 1 when the node asks for it), then the
// negative log-likelihood of it.
Status softmax_cross_entropy_loss(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(const Arg scores, ctx.float_input(0));
  if (scores.shape().size() < 2)
    return ctx.fail("the scores must be [N, C, d1...], are " + shape_string(scores.shape()));
  RECON_ASSIGN_OR_RETURN(const Arg log_prob, ctx.wants_output(1) ? ctx.new_output(1, ctx.input(0).type, scores.shape())
                                                                 : ctx.scratch(scores.dtype(), scores.shape()));
  RECON_RETURN_IF_ERROR(log_softmax_along_axis(ctx, scores, log_prob, 1));
  return negative_log_likelihood(ctx, log_prob);
}

}  // namespace recon::gpu::onnx::ops_builders
