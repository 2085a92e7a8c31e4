#include "gpu/ops/resize.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of shaders/resize.comp

struct ResizePush {
  uint32_t planes, in_h, in_w, out_h, out_w, taps_y, taps_x, x_table;
  float extrapolation;
};
static_assert(sizeof(ResizePush) == 36, "mirrors Push in shaders/resize.comp");

// The source coordinate of output x (interpolate_1d_with_x), or NaN for an output outside the
// crop of tf_crop_and_resize.
double source_coordinate(const ResizeParams& p, const ResizeAxis& a, int64_t x) {
  const double in = static_cast<double>(a.in), xd = static_cast<double>(x);
  const double out_width = a.scale * in;  // the reference's float output width
  switch (p.coordinates) {
    case ResizeCoordinates::kAlignCorners:
      return out_width == 1.0 ? 0.0 : xd * (in - 1.0) / (out_width - 1.0);
    case ResizeCoordinates::kAsymmetric:
      return xd / a.scale;
    case ResizeCoordinates::kTfCropAndResize: {
      double s = out_width == 1.0 ? (a.roi_end - a.roi_start) * (in - 1.0) / 2.0
                                  : xd * (a.roi_end - a.roi_start) * (in - 1.0) / (out_width - 1.0);
      s += a.roi_start * (in - 1.0);
      return s < 0.0 || s > in - 1.0 ? std::nan("") : s;
    }
    case ResizeCoordinates::kPytorchHalfPixel:
      return out_width == 1.0 ? -0.5 : (xd + 0.5) / a.scale - 0.5;
    case ResizeCoordinates::kTfHalfPixelForNn:
      return (xd + 0.5) / a.scale;
    case ResizeCoordinates::kHalfPixel:
    default:
      return (xd + 0.5) / a.scale - 0.5;
  }
}

std::vector<double> coefficients(const ResizeParams& p, double ratio) {
  switch (p.mode) {
    case ResizeMode::kNearest: {
      if (ratio == 1.0) return {0.0, 1.0};
      bool second = false;
      switch (p.nearest) {
        case NearestRounding::kRoundPreferFloor:
          second = ratio > 0.5;
          break;
        case NearestRounding::kRoundPreferCeil:
          second = ratio >= 0.5;
          break;
        case NearestRounding::kFloor:
          second = false;
          break;
        case NearestRounding::kCeil:
          second = true;
          break;
      }
      return {second ? 0.0 : 1.0, second ? 1.0 : 0.0};
    }
    case ResizeMode::kLinear:
      return {1.0 - ratio, ratio};
    case ResizeMode::kCubic:
    default: {
      const double a = p.cubic_a, r = ratio, s = 1.0 - ratio;
      return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a, ((a + 2) * r - (a + 3)) * r * r + 1,
              ((a + 2) * s - (a + 3)) * s * s + 1, ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
    }
  }
}

}  // namespace

ResizeTaps resize_taps(const ResizeParams& p, const ResizeAxis& a) {
  ResizeTaps t;
  const int n = p.mode == ResizeMode::kCubic ? 4 : 2;
  t.taps = p.mode == ResizeMode::kNearest ? 1 : n;
  const int64_t pad = (n + 1) / 2;  // the reference's edge padding, ceil(n / 2)
  for (int64_t o = 0; o < a.out; ++o) {
    const double x = source_coordinate(p, a, o);
    if (std::isnan(x)) {
      t.index.insert(t.index.end(), static_cast<size_t>(t.taps), -1);
      t.weight.insert(t.weight.end(), static_cast<size_t>(t.taps), 0.0f);
      continue;
    }
    const double fl = std::floor(x);
    std::vector<double> c = coefficients(p, x == fl ? 1.0 : x - fl);
    // _get_neighbor: the n indices of the padded axis [−pad, in + pad) closest to x, ties to the
    // lower, in ascending order.
    std::vector<int64_t> candidates;
    for (int64_t i = static_cast<int64_t>(fl) - n; i <= static_cast<int64_t>(fl) + n; ++i) {
      if (i >= -pad && i < a.in + pad) candidates.push_back(i);
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [x](int64_t l, int64_t r) { return std::abs(x - double(l)) < std::abs(x - double(r)); });
    candidates.resize(static_cast<size_t>(n));
    std::sort(candidates.begin(), candidates.end());
    if (p.exclude_outside) {
      double sum = 0.0;
      for (int k = 0; k < n; ++k) {
        if (candidates[static_cast<size_t>(k)] < 0 || candidates[static_cast<size_t>(k)] >= a.in) {
          c[static_cast<size_t>(k)] = 0.0;
        }
        sum += c[static_cast<size_t>(k)];
      }
      for (double& v : c) v /= sum;
    }
    const auto clamped = [&](int k) {
      return static_cast<int32_t>(std::clamp<int64_t>(candidates[static_cast<size_t>(k)], 0, a.in - 1));
    };
    if (p.mode == ResizeMode::kNearest) {
      t.index.push_back(clamped(c[0] != 0.0 ? 0 : 1));
      t.weight.push_back(1.0f);
      continue;
    }
    for (int k = 0; k < n; ++k) {
      t.index.push_back(clamped(k));
      t.weight.push_back(static_cast<float>(c[static_cast<size_t>(k)]));
    }
  }
  return t;
}

Status resize(Graph& g, const Arg& in, const Arg& out, const ResizeTaps& y, const ResizeTaps& x,
              float extrapolation_value) {
  const Shape& s = in.shape();
  const Shape& o = out.shape();
  if (s.size() < 2 || o.size() != s.size() || !std::equal(s.begin(), s.end() - 2, o.begin())) {
    return invalid_argument("resize: in " + shape_string(s) + " and out " + shape_string(o) +
                            " must agree on every axis but the last two");
  }
  if (in.dtype() != out.dtype() || (in.dtype() != DType::kF32 && in.dtype() != DType::kF16)) {
    return invalid_argument(std::string("resize: dtypes ") + dtype_name(in.dtype()) + " -> " + dtype_name(out.dtype()) +
                            " (f32 or f16, equal)");
  }
  const int64_t in_h = s[s.size() - 2], in_w = s.back(), out_h = o[o.size() - 2], out_w = o.back();
  const auto table_ok = [](const ResizeTaps& t, int64_t n_out, int64_t n_in) {
    if (t.taps < 1 || t.index.size() != static_cast<size_t>(n_out * t.taps) || t.weight.size() != t.index.size()) {
      return false;
    }
    return std::all_of(t.index.begin(), t.index.end(), [n_in](int32_t i) { return i >= -1 && i < n_in; });
  };
  if (!table_ok(y, out_h, in_h) || !table_ok(x, out_w, in_w)) {
    return invalid_argument("resize: the tap tables do not match " + shape_string(s) + " -> " + shape_string(o));
  }
  if (in.bytes() > max_binding_bytes() || out.bytes() > max_binding_bytes()) {
    return invalid_argument("resize: in and out must each fit one binding");
  }
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  if (in.numel() == 0) return invalid_argument("resize: cannot resize an empty tensor");
  std::vector<int32_t> index = y.index;
  index.insert(index.end(), x.index.begin(), x.index.end());
  std::vector<float> weight = y.weight;
  weight.insert(weight.end(), x.weight.begin(), x.weight.end());
  Runtime& rt = g.runtime();
  const Shape table{static_cast<int64_t>(index.size())};
  RECON_ASSIGN_OR_RETURN(Tensor index_t, Tensor::from_host(rt, DType::kI32, table, index.data(),
                                                           index.size() * sizeof(int32_t), MemoryRole::kWeights));
  RECON_ASSIGN_OR_RETURN(Tensor weight_t, Tensor::from_host(rt, DType::kF32, table, weight.data(),
                                                            weight.size() * sizeof(float), MemoryRole::kWeights));
  ResizePush push{static_cast<uint32_t>(n / (out_h * out_w)),
                  static_cast<uint32_t>(in_h),
                  static_cast<uint32_t>(in_w),
                  static_cast<uint32_t>(out_h),
                  static_cast<uint32_t>(out_w),
                  static_cast<uint32_t>(y.taps),
                  static_cast<uint32_t>(x.taps),
                  static_cast<uint32_t>(y.index.size()),
                  extrapolation_value};
  const char* shader = in.dtype() == DType::kF32 ? "resize_f32" : "resize_f16";
  return g.dispatch(shader, {},
                    {{in, Access::kRead}, {out, Access::kWrite}, {index_t, Access::kRead}, {weight_t, Access::kRead}},
                    push, Graph::grid_1d((static_cast<uint64_t>(n) + kGroup - 1) / kGroup));
}

Status resize(Graph& g, const Arg& in, const Arg& out, const ResizeParams& params, const ResizeAxis& y,
              const ResizeAxis& x) {
  return resize(g, in, out, resize_taps(params, y), resize_taps(params, x), params.extrapolation_value);
}

}  // namespace recon::gpu::ops
