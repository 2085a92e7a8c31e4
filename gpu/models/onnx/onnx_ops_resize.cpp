// ONNX Resize (opsets 10–18) and Upsample (7–9) on ops::resize: the output size and per-axis scales
// from scales or sizes known at load time (opset 18's axes and keep_aspect_ratio_policy included),
// then the tap tables of the last two axes. Resizing any other axis is refused. GridSample (opset
// 16's 4-D form) on ops::grid_sample, RoiAlign (opsets 10 and 16) on ops::roi_align.
#include <algorithm>
#include <cmath>
#include <string>

#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/grid_sample.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/resize.h"
#include "gpu/ops/roi_align.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

using gpu::ops::NearestRounding;
using gpu::ops::ResizeCoordinates;
using gpu::ops::ResizeMode;

Result<ResizeMode> mode_of(const OpContext& ctx) {
  const std::string mode = ctx.attr_string("mode", "nearest");
  if (mode == "nearest") return ResizeMode::kNearest;
  if (mode == "linear" || mode == "bilinear") return ResizeMode::kLinear;
  if (mode == "cubic") return ResizeMode::kCubic;
  return ctx.fail("unknown mode '" + mode + "'");
}

Result<ResizeCoordinates> coordinates_of(const OpContext& ctx) {
  const std::string c = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  if (c == "half_pixel") return ResizeCoordinates::kHalfPixel;
  if (c == "pytorch_half_pixel") return ResizeCoordinates::kPytorchHalfPixel;
  if (c == "align_corners") return ResizeCoordinates::kAlignCorners;
  if (c == "asymmetric") return ResizeCoordinates::kAsymmetric;
  if (c == "tf_half_pixel_for_nn") return ResizeCoordinates::kTfHalfPixelForNn;
  if (c == "tf_crop_and_resize") return ResizeCoordinates::kTfCropAndResize;
  return ctx.fail("coordinate_transformation_mode '" + c + "' is not supported");
}

Result<NearestRounding> nearest_of(const OpContext& ctx) {
  const std::string n = ctx.attr_string("nearest_mode", "round_prefer_floor");
  if (n == "round_prefer_floor") return NearestRounding::kRoundPreferFloor;
  if (n == "round_prefer_ceil") return NearestRounding::kRoundPreferCeil;
  if (n == "floor") return NearestRounding::kFloor;
  if (n == "ceil") return NearestRounding::kCeil;
  return ctx.fail("unknown nearest_mode '" + n + "'");
}

// One entry per axis of the input: its size, scale and region of interest.
Status resample(OpContext& ctx, const gpu::ops::ResizeParams& params, std::vector<gpu::ops::ResizeAxis> axes) {
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  const Shape& s = x.shape();
  const size_t rank = s.size();
  if (rank == 0) return ctx.fail("cannot resize a scalar");
  Shape out_shape;
  for (size_t d = 0; d < rank; ++d) {
    const gpu::ops::ResizeAxis& a = axes[d];
    const bool moved =
        a.out != a.in || a.scale != 1.0 ||
        (params.coordinates == ResizeCoordinates::kTfCropAndResize && (a.roi_start != 0.0 || a.roi_end != 1.0));
    if (moved && d + 2 < rank) {
      return ctx.fail("resizing axis " + std::to_string(d) + " of " + shape_string(s) +
                      " (only the last two axes are resized)");
    }
    out_shape.push_back(a.out);
  }
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, out_shape));
  // Viewed as [..., H, W]; a 1-D input as [1, W].
  gpu::ops::ResizeAxis y = rank >= 2 ? axes[rank - 2] : gpu::ops::ResizeAxis{};
  const gpu::ops::ResizeAxis& xa = axes[rank - 1];
  Shape in_view = s, out_view = out_shape;
  if (rank == 1) {
    in_view.insert(in_view.begin(), 1);
    out_view.insert(out_view.begin(), 1);
  }
  RECON_ASSIGN_OR_RETURN(Arg in2, gpu::ops::reshape_view(x, in_view));
  RECON_ASSIGN_OR_RETURN(Arg out2, gpu::ops::reshape_view(out, out_view));
  // An axis that does not move takes one tap of weight 1 per output.
  const auto taps = [&](const gpu::ops::ResizeAxis& a) {
    if (a.out == a.in && a.scale == 1.0 && params.coordinates != ResizeCoordinates::kTfCropAndResize) {
      gpu::ops::ResizeTaps t;
      for (int64_t i = 0; i < a.out; ++i) {
        t.index.push_back(static_cast<int32_t>(i));
        t.weight.push_back(1.0f);
      }
      return t;
    }
    return gpu::ops::resize_taps(params, a);
  };
  Status st = gpu::ops::resize(ctx.graph(), in2, out2, taps(y), taps(xa), params.extrapolation_value);
  return st.is_ok() ? st : ctx.fail(st.message());
}

// Axes from scales: out = ⌊in · scale⌋.
Result<std::vector<gpu::ops::ResizeAxis>> axes_from_scales(const OpContext& ctx, const Shape& s,
                                                           const std::vector<double>& scales) {
  if (scales.size() != s.size()) return ctx.fail("scales must have one entry per axis");
  std::vector<gpu::ops::ResizeAxis> axes;
  for (size_t d = 0; d < s.size(); ++d) {
    if (!(scales[d] > 0.0) || !std::isfinite(scales[d])) return ctx.fail("scales must be positive");
    const double out = std::floor(static_cast<double>(s[d]) * scales[d]);
    if (out > double{1 << 30}) return ctx.fail("output too large");
    axes.push_back({s[d], static_cast<int64_t>(out), scales[d]});
  }
  return axes;
}

// GridSample's mode and padding_mode by name; opset 20 renamed bilinear and bicubic to linear and
// cubic, recon's table stops before it.
Result<gpu::ops::GridSampleMode> grid_sample_mode(const std::string& mode) {
  if (mode == "bilinear") return gpu::ops::GridSampleMode::kBilinear;
  if (mode == "nearest") return gpu::ops::GridSampleMode::kNearest;
  if (mode == "bicubic") return gpu::ops::GridSampleMode::kBicubic;
  return invalid_argument("GridSample mode '" + mode + "'");
}
Result<gpu::ops::GridSamplePadding> grid_sample_padding(const std::string& padding) {
  if (padding == "zeros") return gpu::ops::GridSamplePadding::kZeros;
  if (padding == "border") return gpu::ops::GridSamplePadding::kBorder;
  if (padding == "reflection") return gpu::ops::GridSamplePadding::kReflection;
  return invalid_argument("GridSample padding_mode '" + padding + "'");
}

}  // namespace

std::string check_grid_sample(const Node& node, int64_t) {
  const Attribute* mode = node.attribute("mode");
  const Attribute* padding = node.attribute("padding_mode");
  if (mode != nullptr && !grid_sample_mode(mode->s)) return grid_sample_mode(mode->s).status().message();
  if (padding != nullptr && !grid_sample_padding(padding->s)) {
    return grid_sample_padding(padding->s).status().message();
  }
  return {};
}

// X [N, C, H, W] sampled at grid [N, Ho, Wo, 2] into [N, C, Ho, Wo], in the execution dtype.
Status grid_sample(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(gpu::ops::GridSampleMode mode, grid_sample_mode(ctx.attr_string("mode", "bilinear")));
  RECON_ASSIGN_OR_RETURN(gpu::ops::GridSamplePadding padding,
                         grid_sample_padding(ctx.attr_string("padding_mode", "zeros")));
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(Arg grid, ctx.float_input(1));
  const Shape& xs = x.shape();
  const Shape& gs = grid.shape();
  if (xs.size() != 4 || gs.size() != 4 || gs[0] != xs[0] || gs[3] != 2) {
    return ctx.fail("X " + shape_string(xs) + " and grid " + shape_string(gs) +
                    ": recon samples 4-D images, X [N, C, H, W] at grid [N, Ho, Wo, 2]");
  }
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, {xs[0], xs[1], gs[1], gs[2]}));
  return gpu::ops::grid_sample(ctx.graph(), x, grid, out, mode, padding, ctx.attr_int("align_corners", 0) != 0);
}

std::string check_roi_align(const Node& node, int64_t) {
  if (const Attribute* m = node.attribute("mode"); m != nullptr && m->s != "avg" && m->s != "max") {
    return "RoiAlign mode '" + m->s + "'";
  }
  const Attribute* c = node.attribute("coordinate_transformation_mode");
  if (c != nullptr && c->s != "half_pixel" && c->s != "output_half_pixel") {
    return "RoiAlign coordinate_transformation_mode '" + c->s + "'";
  }
  return {};
}

// X [N, C, H, W] pooled over rois [R, 4] of images batch_indices [R] into [R, C, Ho, Wo]. Opset 10
// has no coordinate_transformation_mode and behaves as output_half_pixel.
Status roi_align(OpContext& ctx) {
  gpu::ops::RoiAlignParams p;
  p.spatial_scale = ctx.attr_float("spatial_scale", 1.0f);
  p.sampling_ratio = ctx.attr_int("sampling_ratio", 0);
  p.max = ctx.attr_string("mode", "avg") == "max";
  const std::string default_coordinates = ctx.opset() < 16 ? "output_half_pixel" : "half_pixel";
  p.half_pixel = ctx.attr_string("coordinate_transformation_mode", default_coordinates) == "half_pixel";
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(Arg rois, ctx.float_input(1));
  RECON_ASSIGN_OR_RETURN(Arg batch_indices, ctx.device_input(2));
  const int64_t out_h = ctx.attr_int("output_height", 1), out_w = ctx.attr_int("output_width", 1);
  if (x.shape().size() != 4 || rois.shape().size() != 2 || out_h < 1 || out_w < 1) {
    return ctx.fail("X " + shape_string(x.shape()) + ", rois " + shape_string(rois.shape()) +
                    ": recon pools 4-D images over rois [R, 4] into at least 1 x 1 bins");
  }
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, {rois.shape()[0], x.shape()[1], out_h, out_w}));
  Status st = gpu::ops::roi_align(ctx.graph(), x, rois, batch_indices, out, p);
  return st.is_ok() ? st : ctx.fail(st.message());
}

std::string check_resize(const Node& node, int64_t) {
  if (const Attribute* a = node.attribute("antialias"); a != nullptr && a->i != 0) return "antialiased Resize";
  return {};
}

Status resize(OpContext& ctx) {
  gpu::ops::ResizeParams p;
  RECON_ASSIGN_OR_RETURN(p.mode, mode_of(ctx));
  const Shape s = ctx.input(0).shape;
  const size_t rank = s.size();
  if (ctx.opset() < 11) {
    // Resize-10 is Upsample-9 with scales as an input: asymmetric coordinates, nearest rounding down.
    p.coordinates = ResizeCoordinates::kAsymmetric;
    p.nearest = NearestRounding::kFloor;
    RECON_ASSIGN_OR_RETURN(const HostTensor* sc, ctx.host_input(1));
    RECON_ASSIGN_OR_RETURN(std::vector<double> scales, host_doubles(*sc));
    RECON_ASSIGN_OR_RETURN(auto axes, axes_from_scales(ctx, s, scales));
    return resample(ctx, p, std::move(axes));
  }
  RECON_ASSIGN_OR_RETURN(p.coordinates, coordinates_of(ctx));
  RECON_ASSIGN_OR_RETURN(p.nearest, nearest_of(ctx));
  p.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  p.extrapolation_value = ctx.attr_float("extrapolation_value", 0.0f);
  // Opset 18: the axes the roi, scales and sizes cover (all by default).
  std::vector<int64_t> axes_attr = ctx.attr_ints("axes");
  std::vector<size_t> named;
  if (axes_attr.empty()) {
    for (size_t d = 0; d < rank; ++d) named.push_back(d);
  } else {
    for (int64_t a : axes_attr) {
      if (a < 0) a += static_cast<int64_t>(rank);
      if (a < 0 || a >= static_cast<int64_t>(rank)) return ctx.fail("axis out of range");
      named.push_back(static_cast<size_t>(a));
    }
  }
  const auto present = [&](size_t i) { return ctx.has_input(i) && ctx.input(i).shape != Shape{0}; };
  std::vector<gpu::ops::ResizeAxis> axes;
  for (size_t d = 0; d < rank; ++d) axes.push_back({s[d], s[d], 1.0});
  if (present(3)) {
    RECON_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ctx.host_ints(3));
    if (sizes.size() != named.size()) return ctx.fail("sizes must have one entry per resized axis");
    const std::string policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t i = 0; i < named.size(); ++i) {
        gpu::ops::ResizeAxis& a = axes[named[i]];
        a.out = sizes[i];
        a.scale = static_cast<double>(sizes[i]) / static_cast<double>(a.in);
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double scale = policy == "not_larger" ? INFINITY : 0.0;
      for (size_t i = 0; i < named.size(); ++i) {
        const double r = static_cast<double>(sizes[i]) / static_cast<double>(axes[named[i]].in);
        scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
      }
      for (size_t i : named) {
        axes[i].scale = scale;
        // round_int of the spec: to the nearest integer, halves up.
        axes[i].out = static_cast<int64_t>(std::floor(scale * static_cast<double>(axes[i].in) + 0.5));
      }
    } else {
      return ctx.fail("unknown keep_aspect_ratio_policy '" + policy + "'");
    }
  } else if (present(2)) {
    RECON_ASSIGN_OR_RETURN(const HostTensor* sc, ctx.host_input(2));
    RECON_ASSIGN_OR_RETURN(std::vector<double> scales, host_doubles(*sc));
    if (scales.size() != named.size()) return ctx.fail("scales must have one entry per resized axis");
    std::vector<double> full(rank, 1.0);
    for (size_t i = 0; i < named.size(); ++i) full[named[i]] = scales[i];
    RECON_ASSIGN_OR_RETURN(axes, axes_from_scales(ctx, s, full));
  } else {
    return ctx.fail("neither scales nor sizes given");
  }
  if (p.coordinates == ResizeCoordinates::kTfCropAndResize) {
    if (!present(1)) return ctx.fail("tf_crop_and_resize needs roi");
    RECON_ASSIGN_OR_RETURN(const HostTensor* r, ctx.host_input(1));
    RECON_ASSIGN_OR_RETURN(std::vector<double> roi, host_doubles(*r));
    if (roi.size() != 2 * named.size()) return ctx.fail("roi must have two entries per resized axis");
    for (size_t i = 0; i < named.size(); ++i) {
      axes[named[i]].roi_start = roi[i];
      axes[named[i]].roi_end = roi[i + named.size()];
      // With scales the spec sizes the output by the region (⌊in·(end − start)·scale⌋), which the
      // reference's coordinates do not follow: only sizes are taken with a region.
      if (!present(3) && (roi[i] != 0.0 || roi[i + named.size()] != 1.0)) {
        return ctx.fail("tf_crop_and_resize with scales and a region of interest (give sizes)");
      }
    }
  }
  return resample(ctx, p, std::move(axes));
}

Status upsample(OpContext& ctx) {
  gpu::ops::ResizeParams p;
  RECON_ASSIGN_OR_RETURN(p.mode, mode_of(ctx));
  if (p.mode == ResizeMode::kCubic) return ctx.fail("Upsample has no cubic mode");
  p.coordinates = ResizeCoordinates::kAsymmetric;
  p.nearest = NearestRounding::kFloor;
  std::vector<double> scales;
  if (ctx.opset() < 9) {
    const std::vector<float> attr = ctx.attr_floats("scales");
    scales.assign(attr.begin(), attr.end());
  } else {
    RECON_ASSIGN_OR_RETURN(const HostTensor* sc, ctx.host_input(1));
    RECON_ASSIGN_OR_RETURN(scales, host_doubles(*sc));
  }
  RECON_ASSIGN_OR_RETURN(auto axes, axes_from_scales(ctx, ctx.input(0).shape, scales));
  return resample(ctx, p, std::move(axes));
}

}  // namespace recon::gpu::onnx::ops_builders
