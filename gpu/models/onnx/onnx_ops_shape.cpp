// ONNX ops that make, view or rearrange tensors: constants, Shape, Reshape/Flatten/Squeeze/
// Unsqueeze (views), Transpose, Concat, Split, Slice, Gather, Expand. With every input known on the
// host they fold there (shape arithmetic); otherwise they record layout copies on the device.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <numeric>
#include <string>

#include "gpu/models/onnx/onnx_fold.h"
#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/gather_elements.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/pad.h"
#include "gpu/ops/trilu.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

// The axes a Squeeze/Unsqueeze names: an attribute before opset 13, an input from 13.
Result<std::vector<int64_t>> axes_of(OpContext& ctx) {
  if (ctx.opset() < 13) return ctx.attr_ints("axes");
  if (!ctx.has_input(1)) return std::vector<int64_t>{};
  return ctx.host_ints(1);
}

// DepthToSpace and SpaceToDepth: input 0 seen through the 6-D `view`, permuted by `perm`, as
// `out` (a view of the permuted elements); folded on the host where the input is known.
Status rearrange(OpContext& ctx, const Shape& view, const std::vector<int>& perm, const Shape& out) {
  const Value& in = ctx.input(0);
  if (in.is_host() && in.host->numel() <= kMaxFoldElements) {
    HostTensor t = *in.host;
    t.dims = view;
    t.name.clear();
    Result<HostTensor> permuted = fold_transpose(t, perm);
    if (permuted) permuted->dims = out;
    return ctx.set_host_result(0, std::move(permuted));
  }
  Shape permuted;
  for (int d : perm) permuted.push_back(view[static_cast<size_t>(d)]);
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg x6, ops::reshape_view(x, view));
  RECON_ASSIGN_OR_RETURN(Arg y, ctx.new_output(0, in.type, out));
  RECON_ASSIGN_OR_RETURN(Arg y6, ops::reshape_view(y, permuted));
  return ops::permute(ctx.graph(), x6, y6, perm);
}

// The block size of DepthToSpace or SpaceToDepth over an [N, C, H, W] input.
Result<int64_t> block_size_of(OpContext& ctx) {
  if (ctx.input(0).shape.size() != 4) return ctx.fail("expects a 4-D [N, C, H, W] input");
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (b < 1) return ctx.fail("blocksize must be at least 1");
  return b;
}

}  // namespace

Status depth_to_space(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(const int64_t b, block_size_of(ctx));
  const Shape& s = ctx.input(0).shape;
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (c % (b * b) != 0) return ctx.fail("channels " + std::to_string(c) + " not divisible by blocksize²");
  const int64_t co = c / (b * b);
  const Shape out{n, co, h * b, w * b};
  const std::string mode = ctx.attr_string("mode", "DCR");
  if (mode == "DCR") return rearrange(ctx, {n, b, b, co, h, w}, {0, 3, 4, 1, 5, 2}, out);
  if (mode == "CRD") return rearrange(ctx, {n, co, b, b, h, w}, {0, 1, 4, 2, 5, 3}, out);
  return ctx.fail("mode '" + mode + "' (DCR or CRD)");
}

Status space_to_depth(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(const int64_t b, block_size_of(ctx));
  const Shape& s = ctx.input(0).shape;
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (h % b != 0 || w % b != 0) return ctx.fail("height and width must be multiples of blocksize");
  return rearrange(ctx, {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4}, {n, c * b * b, h / b, w / b});
}

Status trilu(OpContext& ctx) {
  const Value& in = ctx.input(0);
  if (in.shape.size() < 2) return ctx.fail("expects a tensor of rank 2 or more");
  int64_t k = 0;
  if (ctx.has_input(1)) {
    RECON_ASSIGN_OR_RETURN(std::vector<int64_t> ks, ctx.host_ints(1));
    if (ks.size() != 1) return ctx.fail("k must hold one value");
    k = ks[0];
  }
  const bool upper = ctx.attr_int("upper", 1) != 0;
  if (in.is_host() && in.host->numel() <= kMaxFoldElements) {
    return ctx.set_host_result(0, fold_trilu(*in.host, k, upper));
  }
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg y, ctx.new_output(0, in.type, in.shape));
  return gpu::ops::trilu(ctx.graph(), x, y, k, upper);
}

Status constant(OpContext& ctx) {
  const Node& n = ctx.node();
  if (const Attribute* a = n.attribute("value"); a != nullptr) {
    ctx.set_host_output(0, a->t);
    return Status::ok();
  }
  if (const Attribute* a = n.attribute("value_float"); a != nullptr) {
    const double v = a->f;
    return ctx.set_host_result(0, make_tensor(ElemType::kFloat, {}, std::span<const double>(&v, 1)));
  }
  if (const Attribute* a = n.attribute("value_floats"); a != nullptr) {
    std::vector<double> v(a->floats.begin(), a->floats.end());
    return ctx.set_host_result(0, make_tensor(ElemType::kFloat, {static_cast<int64_t>(v.size())}, v));
  }
  if (const Attribute* a = n.attribute("value_int"); a != nullptr) {
    ctx.set_host_output(0, make_int64_tensor({}, std::span<const int64_t>(&a->i, 1)));
    return Status::ok();
  }
  if (const Attribute* a = n.attribute("value_ints"); a != nullptr) {
    ctx.set_host_output(0, make_int64_tensor({static_cast<int64_t>(a->ints.size())}, a->ints));
    return Status::ok();
  }
  return ctx.fail("no value attribute recon reads (value, value_float(s), value_int(s))");
}

// Filled in its own type, one element's bytes repeated: a model's weights may be made this way
// (ONNX's `light` models), VGG-19's first fully connected one is 102.8 M floats.
Status constant_of_shape(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.host_ints(0));
  for (int64_t d : dims) {
    if (d < 0) return ctx.fail("negative dimension");
  }
  const Attribute* a = ctx.node().attribute("value");
  const ElemType type = a != nullptr ? a->t.type : ElemType::kFloat;
  double fill = 0.0;
  if (a != nullptr) {
    RECON_ASSIGN_OR_RETURN(std::vector<double> v, host_doubles(a->t));
    if (v.size() != 1) return ctx.fail("value must hold one element");
    fill = v[0];
  }
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d != 0 && n > kMaxConstantOfShapeElements / d) return ctx.fail("ConstantOfShape of more than 2^27 elements");
    n *= d;
  }
  RECON_ASSIGN_OR_RETURN(HostTensor one, make_tensor(type, {}, std::span(&fill, 1)));
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * one.bytes.size());
  for (size_t at = 0; at < bytes.size(); at += one.bytes.size()) {
    std::memcpy(bytes.data() + at, one.bytes.data(), one.bytes.size());
  }
  return ctx.set_host_result(0, HostTensor::owned(type, std::move(dims), std::move(bytes)));
}

Status shape(OpContext& ctx) {
  const Shape& s = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = ctx.attr_int("start", 0), end = ctx.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(s.begin() + start, s.begin() + end);
  ctx.set_host_output(0, make_int64_tensor({static_cast<int64_t>(dims.size())}, dims));
  return Status::ok();
}

Status size(OpContext& ctx) {
  const int64_t n = shape_numel(ctx.input(0).shape);
  ctx.set_host_output(0, make_int64_tensor({}, std::span(&n, 1)));
  return Status::ok();
}

// A 2-D identity of the input's shape (its values unused), shifted by k diagonals.
Status eye_like(OpContext& ctx) {
  const Shape& s = ctx.input(0).shape;
  if (s.size() != 2) return ctx.fail("expects a 2-D input");
  if (s[0] * s[1] > kMaxFoldElements) return ctx.fail("EyeLike of more than 2^26 elements");
  const auto type = static_cast<ElemType>(ctx.attr_int("dtype", static_cast<int64_t>(ctx.input(0).type)));
  const int64_t k = ctx.attr_int("k", 0);
  std::vector<double> values(static_cast<size_t>(s[0] * s[1]), 0.0);
  for (int64_t r = 0; r < s[0]; ++r) {
    const int64_t c = r + k;
    if (c >= 0 && c < s[1]) values[static_cast<size_t>(r * s[1] + c)] = 1.0;
  }
  return ctx.set_host_result(0, make_tensor(type, {s[0], s[1]}, values));
}

Status reshape(OpContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  std::vector<int64_t> target;
  if (ctx.opset() < 5) {
    target = ctx.attr_ints("shape");
  } else {
    RECON_ASSIGN_OR_RETURN(target, ctx.host_ints(1));
  }
  const bool allow_zero = ctx.attr_int("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < target.size(); ++d) {
    if (target[d] == 0 && !allow_zero) {
      if (d >= in.size()) return ctx.fail("shape copies dimension " + std::to_string(d) + " the input lacks");
      target[d] = in[d];
    }
    if (target[d] == -1) {
      if (infer >= 0) return ctx.fail("more than one -1 in the shape");
      infer = static_cast<int64_t>(d);
    } else if (target[d] < 0) {
      return ctx.fail("negative dimension in the shape");
    } else {
      known *= target[d];
    }
  }
  const int64_t numel = shape_numel(in);
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) return ctx.fail("cannot infer the -1 dimension of " + shape_string(target));
    target[static_cast<size_t>(infer)] = numel / known;
  }
  if (shape_numel(target) != numel) {
    return ctx.fail("cannot reshape " + shape_string(in) + " into " + shape_string(target));
  }
  return ctx.set_view_output(0, 0, target);
}

Status flatten(OpContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return ctx.fail("axis out of range");
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? rows : cols) *= in[static_cast<size_t>(d)];
  return ctx.set_view_output(0, 0, {rows, cols});
}

Status squeeze(OpContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_of(ctx));
  for (int64_t& a : axes) RECON_RETURN_IF_ERROR(ctx.normalise_axis(a, rank));
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    const bool named = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (named && in[static_cast<size_t>(d)] != 1)
      return ctx.fail("cannot squeeze axis " + std::to_string(d) + " of " + shape_string(in));
    if ((axes.empty() && in[static_cast<size_t>(d)] == 1) || named) continue;
    out.push_back(in[static_cast<size_t>(d)]);
  }
  return ctx.set_view_output(0, 0, out);
}

Status unsqueeze(OpContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_of(ctx));
  const int64_t rank = static_cast<int64_t>(in.size() + axes.size());
  for (int64_t& a : axes) RECON_RETURN_IF_ERROR(ctx.normalise_axis(a, rank));
  std::sort(axes.begin(), axes.end());
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::binary_search(axes.begin(), axes.end(), d)) {
      out.push_back(1);
    } else {
      if (next >= in.size()) return ctx.fail("repeated axes");
      out.push_back(in[next++]);
    }
  }
  return ctx.set_view_output(0, 0, out);
}

Status transpose(OpContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const int rank = static_cast<int>(in.size());
  std::vector<int64_t> p = ctx.attr_ints("perm");
  if (p.empty()) {
    for (int d = rank - 1; d >= 0; --d) p.push_back(d);
  }
  if (static_cast<int>(p.size()) != rank) return ctx.fail("perm has the wrong length");
  std::vector<int> perm(p.begin(), p.end());
  Shape out;
  for (int d : perm) {
    if (d < 0 || d >= rank) return ctx.fail("perm out of range");
    out.push_back(in[static_cast<size_t>(d)]);
  }
  // Host values (shape arithmetic such as PyTorch's pads, small weights) fold.
  if (ctx.input(0).is_host() && ctx.input(0).host->numel() <= kMaxFoldElements) {
    return ctx.set_host_result(0, fold_transpose(*ctx.input(0).host, perm));
  }
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg y, ctx.new_output(0, ctx.input(0).type, out));
  return gpu::ops::permute(ctx.graph(), x, y, perm);
}

Status concat(OpContext& ctx) {
  int64_t axis = ctx.attr_int("axis", 0);
  const int64_t rank = static_cast<int64_t>(ctx.input(0).shape.size());
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, rank));
  if (ctx.all_inputs_on_host()) {
    std::vector<const HostTensor*> parts;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      if (ctx.has_input(i)) parts.push_back(&*ctx.input(i).host);
    }
    return ctx.set_host_result(0, fold_concat(parts, axis));
  }
  std::vector<Arg> parts;
  Shape out = ctx.input(0).shape;
  out[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (!ctx.has_input(i) || shape_numel(ctx.input(i).shape) == 0) continue;
    RECON_ASSIGN_OR_RETURN(Arg a, ctx.device_input(i));
    out[static_cast<size_t>(axis)] += a.shape()[static_cast<size_t>(axis)];
    parts.push_back(a);
  }
  RECON_ASSIGN_OR_RETURN(Arg y, ctx.new_output(0, ctx.input(0).type, out));
  return gpu::ops::concat(ctx.graph(), parts, static_cast<int>(axis), y);
}

Status split(OpContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  int64_t axis = ctx.attr_int("axis", 0);
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, static_cast<int64_t>(in.size())));
  std::vector<int64_t> sizes;
  if (ctx.opset() < 13) {
    sizes = ctx.attr_ints("split");
  } else if (ctx.has_input(1)) {
    RECON_ASSIGN_OR_RETURN(sizes, ctx.host_ints(1));
  }
  const int64_t len = in[static_cast<size_t>(axis)];
  const int64_t parts = static_cast<int64_t>(ctx.output_count());
  if (sizes.empty()) {
    // Equal parts; from opset 18 the last may be smaller (num_outputs).
    const int64_t each = (len + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(each, len - i * each));
  }
  if (static_cast<int64_t>(sizes.size()) != parts || std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != len) {
    return ctx.fail("split sizes do not cover the axis");
  }
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  std::vector<Arg> outs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape s = in;
    s[static_cast<size_t>(axis)] = sizes[i];
    RECON_ASSIGN_OR_RETURN(Arg o, ctx.new_output(i, ctx.input(0).type, s));
    outs.push_back(o);
  }
  return gpu::ops::split(ctx.graph(), x, static_cast<int>(axis), outs);
}

Status slice(OpContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    RECON_ASSIGN_OR_RETURN(starts, ctx.host_ints(1));
    RECON_ASSIGN_OR_RETURN(ends, ctx.host_ints(2));
    if (ctx.has_input(3)) {
      RECON_ASSIGN_OR_RETURN(axes, ctx.host_ints(3));
    }
    if (ctx.has_input(4)) {
      RECON_ASSIGN_OR_RETURN(steps, ctx.host_ints(4));
    }
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return ctx.fail("starts, ends, axes and steps differ in length");
  }
  // Per axis of the input: [start, end) with step, clamped as ONNX says.
  std::vector<int64_t> s(static_cast<size_t>(rank), 0), e(in.begin(), in.end()), st(static_cast<size_t>(rank), 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    RECON_RETURN_IF_ERROR(ctx.normalise_axis(a, rank));
    const int64_t dim = in[static_cast<size_t>(a)], step = steps[i];
    if (step == 0) return ctx.fail("step 0");
    int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t f = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      f = std::clamp<int64_t>(f, 0, dim);
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      f = std::clamp<int64_t>(f, -1, dim - 1);
    }
    s[static_cast<size_t>(a)] = b;
    e[static_cast<size_t>(a)] = f;
    st[static_cast<size_t>(a)] = step;
  }
  if (ctx.input(0).is_host()) return ctx.set_host_result(0, fold_slice(*ctx.input(0).host, s, e, st));
  std::vector<gpu::ops::SliceAxis> spec;
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    // A backward end of −1 runs through element 0, which ops::slice (Python's bounds) reads as INT64_MIN.
    spec.push_back({s[i], st[i] < 0 && e[i] < 0 ? INT64_MIN : e[i], st[i]});
    const int64_t span = st[i] > 0 ? e[i] - s[i] : s[i] - e[i], step = std::abs(st[i]);
    out.push_back(std::max<int64_t>((span + step - 1) / step, 0));
  }
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg y, ctx.new_output(0, ctx.input(0).type, out));
  return gpu::ops::slice(ctx.graph(), x, y, spec);
}

Status gather(OpContext& ctx) {
  int64_t axis = ctx.attr_int("axis", 0);
  const Shape& in = ctx.input(0).shape;
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, static_cast<int64_t>(in.size())));
  if (ctx.all_inputs_on_host())
    return ctx.set_host_result(0, fold_gather(*ctx.input(0).host, *ctx.input(1).host, axis));
  if (!ctx.input(1).is_host() || !ctx.input(1).shape.empty()) {
    // Indices computed at run time, or many of them (embedding lookups): the gather kernel.
    if (device_dtype(ctx.input(1).type, DType::kF32) != DType::kI32) return ctx.fail("indices must be integers");
    RECON_ASSIGN_OR_RETURN(Arg data, ctx.device_input(0));
    RECON_ASSIGN_OR_RETURN(Arg indices, ctx.device_input(1));
    Shape out(in.begin(), in.begin() + axis);
    out.insert(out.end(), indices.shape().begin(), indices.shape().end());
    out.insert(out.end(), in.begin() + axis + 1, in.end());
    RECON_ASSIGN_OR_RETURN(Arg y, ctx.new_output(0, ctx.input(0).type, out));
    return gpu::ops::gather(ctx.graph(), data, indices, y, static_cast<int>(axis));
  }
  // Data on the device with one constant index: a slice that drops the axis (a transformer's class
  // token, the last time step).
  const HostTensor* indices = &*ctx.input(1).host;
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> idx, host_int64s(*indices));
  int64_t k = idx[0] < 0 ? idx[0] + in[static_cast<size_t>(axis)] : idx[0];
  if (k < 0 || k >= in[static_cast<size_t>(axis)]) return ctx.fail("index out of range");
  std::vector<gpu::ops::SliceAxis> spec(in.size());
  spec[static_cast<size_t>(axis)] = {k, k + 1, 1};
  Shape kept = in, out;
  kept[static_cast<size_t>(axis)] = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    if (static_cast<int64_t>(d) != axis) out.push_back(in[d]);
  }
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg y, ctx.new_output(0, ctx.input(0).type, out));
  RECON_ASSIGN_OR_RETURN(Arg y_kept, gpu::ops::reshape_view(y, kept));
  return gpu::ops::slice(ctx.graph(), x, y_kept, spec);
}

Status gather_elements(OpContext& ctx) {
  int64_t axis = ctx.attr_int("axis", 0);
  const Shape& in = ctx.input(0).shape;
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, static_cast<int64_t>(in.size())));
  if (ctx.all_inputs_on_host()) {
    return ctx.set_host_result(0, fold_gather_elements(*ctx.input(0).host, *ctx.input(1).host, axis));
  }
  if (device_dtype(ctx.input(1).type, DType::kF32) != DType::kI32) return ctx.fail("indices must be integers");
  RECON_ASSIGN_OR_RETURN(Arg data, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg indices, ctx.device_input(1));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, indices.shape()));
  return gpu::ops::gather_elements(ctx.graph(), data, indices, out, static_cast<int>(axis));
}

// ReverseSequence: out[t, b] = in[lens[b] − 1 − t, b] for t < lens[b], else in[t, b] (time and
// batch axes as the node says): a GatherElements along the time axis of indices made on the host
// from sequence_lens, which must be known at load (a shape tensor).
Status reverse_sequence(OpContext& ctx) {
  const Shape& s = ctx.input(0).shape;
  const int64_t time_axis = ctx.attr_int("time_axis", 0), batch_axis = ctx.attr_int("batch_axis", 1);
  const bool axes_ok = (time_axis == 0 && batch_axis == 1) || (time_axis == 1 && batch_axis == 0);
  if (s.size() < 2 || !axes_ok) return ctx.fail("expects time and batch axes 0 and 1 of an input of rank 2 or more");
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> lens, ctx.host_ints(1));
  const int64_t steps = s[static_cast<size_t>(time_axis)], batch = s[static_cast<size_t>(batch_axis)];
  if (static_cast<int64_t>(lens.size()) != batch) return ctx.fail("sequence_lens must hold one length per batch");
  for (int64_t len : lens) {
    if (len < 0 || len > steps) return ctx.fail("a sequence length outside [0, " + std::to_string(steps) + "]");
  }
  const int64_t n = shape_numel(s);
  if (n > kMaxFoldElements) return ctx.fail("ReverseSequence of more than 2^26 elements");
  const int64_t inner = n / (s[0] * s[1]), time_stride = time_axis == 0 ? s[1] * inner : inner;
  const int64_t batch_stride = batch_axis == 0 ? s[1] * inner : inner;
  std::vector<double> index(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) {
    const int64_t t = e / time_stride % steps, len = lens[static_cast<size_t>(e / batch_stride % batch)];
    index[static_cast<size_t>(e)] = static_cast<double>(t < len ? len - 1 - t : t);
  }
  RECON_ASSIGN_OR_RETURN(HostTensor indices, make_tensor(ElemType::kInt64, s, index));
  if (ctx.input(0).is_host())
    return ctx.set_host_result(0, fold_gather_elements(*ctx.input(0).host, indices, time_axis));
  RECON_ASSIGN_OR_RETURN(Arg index_arg, upload_host_tensor(ctx.runtime(), std::move(indices), ctx.float_dtype()));
  RECON_ASSIGN_OR_RETURN(Arg data, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, s));
  return gpu::ops::gather_elements(ctx.graph(), data, index_arg, out, static_cast<int>(time_axis));
}

Status expand(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> target, ctx.host_ints(1));
  if (ctx.input(0).is_host()) return ctx.set_host_result(0, fold_expand(*ctx.input(0).host, target));
  // On the device: size-1 axes repeat (the pad kernel's wrap mode), the input viewed at the
  // output's rank.
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  Result<std::vector<int64_t>> shape = broadcast_dims(x.shape(), target);
  if (!shape) return ctx.fail(shape.status().message());
  Shape padded(shape->size() - x.shape().size(), 1);
  padded.insert(padded.end(), x.shape().begin(), x.shape().end());
  RECON_ASSIGN_OR_RETURN(Arg view, gpu::ops::reshape_view(x, padded));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, *shape));
  return gpu::ops::pad_wrap(ctx.graph(), view, out);
}

Status tile(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, ctx.host_ints(1));
  if (repeats.size() != x.shape().size()) return ctx.fail("repeats must have one entry per axis");
  Shape out_shape = x.shape();
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 0) return ctx.fail("negative repeats");
    out_shape[d] *= repeats[d];
  }
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, out_shape));
  return gpu::ops::pad_wrap(ctx.graph(), x, out);
}

std::string check_pad(const Node& node, int64_t) {
  const Attribute* m = node.attribute("mode");
  if (m != nullptr && m->s != "constant" && m->s != "edge" && m->s != "reflect" && m->s != "wrap") {
    return "Pad mode '" + m->s + "'";
  }
  return {};
}

// Pad: pads (and the constant) as attributes before opset 11, as inputs known at load time since;
// opset 18's axes input names the axes the pads cover.
Status pad(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  std::vector<int64_t> pads;
  double value = 0.0;
  std::vector<int64_t> axes;
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints("pads");
    value = ctx.attr_float("value", 0.0f);
  } else {
    RECON_ASSIGN_OR_RETURN(pads, ctx.host_ints(1));
    if (ctx.has_input(2)) {
      RECON_ASSIGN_OR_RETURN(const HostTensor* v, ctx.host_input(2));
      RECON_ASSIGN_OR_RETURN(std::vector<double> vs, host_doubles(*v));
      if (vs.size() > 1) return ctx.fail("constant_value must be a scalar");
      if (!vs.empty()) value = vs[0];
    }
    if (ctx.has_input(3)) {
      RECON_ASSIGN_OR_RETURN(axes, ctx.host_ints(3));
    }
  }
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size()) {
    return ctx.fail(std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) + " axes");
  }
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0);
  Shape out_shape = x.shape();
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    RECON_RETURN_IF_ERROR(ctx.normalise_axis(a, rank));
    begin[static_cast<size_t>(a)] = pads[i];
    out_shape[static_cast<size_t>(a)] += pads[i] + pads[i + axes.size()];
    if (out_shape[static_cast<size_t>(a)] < 0) return ctx.fail("pads crop more than the input holds");
  }
  const std::string mode = ctx.attr_string("mode", "constant");
  const gpu::ops::PadMode m = mode == "edge"      ? gpu::ops::PadMode::kEdge
                              : mode == "reflect" ? gpu::ops::PadMode::kReflect
                              : mode == "wrap"    ? gpu::ops::PadMode::kWrap
                                                  : gpu::ops::PadMode::kConstant;
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, out_shape));
  Status st = gpu::ops::pad(ctx.graph(), x, out, begin, m, value);
  return st.is_ok() ? st : ctx.fail(st.message());
}

Status range(OpContext& ctx) {
  // Its length is its output's shape: bounds computed on the device cannot decide it.
  if (!ctx.all_inputs_on_host()) {
    return ctx.fail(
        "Range's start, limit and delta must be known when the graph is compiled (constants, shape "
        "arithmetic or graph inputs)");
  }
  RECON_ASSIGN_OR_RETURN(std::vector<double> start, host_doubles(*ctx.input(0).host));
  RECON_ASSIGN_OR_RETURN(std::vector<double> limit, host_doubles(*ctx.input(1).host));
  RECON_ASSIGN_OR_RETURN(std::vector<double> delta, host_doubles(*ctx.input(2).host));
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1 || delta[0] == 0.0)
    return ctx.fail("bad Range inputs");
  const double count = std::max(std::ceil((limit[0] - start[0]) / delta[0]), 0.0);
  if (count > double{1 << 24}) return ctx.fail("Range of more than 2^24 elements");
  std::vector<double> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start[0] + static_cast<double>(i) * delta[0];
  return ctx.set_host_result(0, make_tensor(ctx.input(0).type, {static_cast<int64_t>(v.size())}, v));
}

namespace {

// A generalized cosine window of `size` samples: a0 − a1·cos(2πn/N) + a2·cos(4πn/N), N the size
// when periodic, one less when symmetric (opset 17's HannWindow, HammingWindow, BlackmanWindow).
Status cosine_window(OpContext& ctx, double a0, double a1, double a2) {
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> size, ctx.host_ints(0));
  if (size.size() != 1 || size[0] < 0) return ctx.fail("size must be one non-negative integer");
  if (size[0] > kMaxFoldElements) return ctx.fail("a window of more than 2^26 samples");
  const bool periodic = ctx.attr_int("periodic", 1) != 0;
  const double period = static_cast<double>(periodic ? size[0] : size[0] - 1);
  std::vector<double> w(static_cast<size_t>(size[0]));
  for (size_t n = 0; n < w.size(); ++n) {
    const double phase = 2.0 * std::numbers::pi * static_cast<double>(n) / period;
    w[n] = a0 - a1 * std::cos(phase) + a2 * std::cos(2.0 * phase);
  }
  const auto type = static_cast<ElemType>(ctx.attr_int("output_datatype", static_cast<int64_t>(ElemType::kFloat)));
  return ctx.set_host_result(0, make_tensor(type, {size[0]}, w));
}

}  // namespace

Status hann_window(OpContext& ctx) {
  return cosine_window(ctx, 0.5, 0.5, 0.0);
}

Status hamming_window(OpContext& ctx) {
  return cosine_window(ctx, 25.0 / 46.0, 21.0 / 46.0, 0.0);
}

Status blackman_window(OpContext& ctx) {
  return cosine_window(ctx, 0.42, 0.5, 0.08);
}

}  // namespace recon::gpu::onnx::ops_builders
