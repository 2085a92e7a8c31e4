#include "gpu/ops/pool2d.h"

#include <algorithm>
#include <optional>
#include <string>

#include "gpu/ops/layout.h"
#include "gpu/ops/wide_access.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of shaders/pool.comp
// Extents, strides and their sums stay far inside the shader's 32-bit int arithmetic (a plane
// itself must fit one binding).
constexpr int64_t kMaxExtent = int64_t{1} << 24;

struct PoolPush {
  uint32_t planes, in_h, in_w, out_h, out_w;
  uint32_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  uint32_t base_in, base_out;
  uint32_t pad_h_end, pad_w_end;
  uint32_t base_indices, first_plane;
  uint32_t dilation_h, dilation_w;
};
static_assert(sizeof(PoolPush) == 76, "mirrors Push in shaders/pool.comp");

// Where max pooling writes its maxima's positions (max_pool2d_with_indices).
struct IndicesOut {
  const Arg& arg;
  bool column_major;
};

int64_t stride_of(const Pool2dParams& p, int d) {
  return p.stride[d] == 0 ? p.kernel[d] : p.stride[d];
}

int64_t pad_end_of(const Pool2dParams& p, int d) {
  return p.pad_end[d] < 0 ? p.pad[d] : p.pad_end[d];
}

// The extent of a window whose taps lie `dilation` apart.
int64_t span_of(const Pool2dParams& p, int d) {
  return p.dilation[d] * (p.kernel[d] - 1) + 1;
}

// PyTorch's pooling_output_shape, with the padding before and after apart: the last window must
// start inside the input or its leading padding. `span` is the kernel's extent with dilation.
int64_t out_extent(int64_t in, int64_t span, int64_t pad, int64_t pad_end, int64_t stride, bool ceil_mode) {
  const int64_t num = in + pad + pad_end - span + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// `channels_last`: in and out are [B, H, W, C], each image one "plane" of H·W·C elements.
Status pool(Graph& g, uint32_t mode, const char* name, const Arg& in, const Arg& out, const Pool2dParams& params,
            const std::optional<IndicesOut>& indices = std::nullopt, bool channels_last = false) {
  if (in.shape().size() != 4) {
    return invalid_argument(std::string(name) + ": in " + shape_string(in.shape()) + " must be " +
                            (channels_last ? "[B, H, W, C]" : "[B, C, H, W]"));
  }
  // The planar shape the checks below speak of.
  const Shape& given = in.shape();
  const Shape s = channels_last ? Shape{given[0], given[3], given[1], given[2]} : given;
  if (channels_last && s[1] > kMaxExtent) return invalid_argument(std::string(name) + ": more than 2^24 channels");
  const bool dtype_ok =
      in.dtype() == DType::kF32 || in.dtype() == DType::kF16 || (mode == 0 && in.dtype() == DType::kI32);
  if (in.dtype() != out.dtype() || !dtype_ok) {
    return invalid_argument(std::string(name) + ": dtypes " + dtype_name(in.dtype()) + " -> " +
                            dtype_name(out.dtype()) + " (f32 or f16, or i32 for max; equal)");
  }
  if (mode == 1 && params.dilation != std::array<int64_t, 2>{1, 1}) {
    return invalid_argument(std::string(name) + ": dilation is for max pooling only");
  }
  Result<std::array<int64_t, 2>> size = pool2d_output_size(s[2], s[3], params);
  if (!size.is_ok()) return size.status().with_context(name);
  const Shape want =
      channels_last ? Shape{s[0], (*size)[0], (*size)[1], s[1]} : Shape{s[0], s[1], (*size)[0], (*size)[1]};
  if (out.shape() != want) {
    return invalid_argument(std::string(name) + ": out must be " + shape_string(want) + ", is " +
                            shape_string(out.shape()));
  }
  if (indices && (indices->arg.dtype() != DType::kI32 || indices->arg.shape() != want)) {
    return invalid_argument(std::string(name) + ": indices must be i32 " + shape_string(want));
  }
  // Planar: one plane per image and channel; channels-last: one per image, all its channels.
  const int64_t planes = channels_last ? s[0] : s[0] * s[1];
  if (planes == 0 || s[1] == 0) return Status::ok();
  const int64_t per = channels_last ? s[1] : 1;
  const int64_t in_plane = s[2] * s[3] * per, out_plane = (*size)[0] * (*size)[1] * per;
  if (indices && planes * in_plane > INT32_MAX) {
    return invalid_argument(std::string(name) + ": positions beyond 2^31 do not fit the i32 indices");
  }
  const uint64_t es = dtype_size(in.dtype());
  RECON_ASSIGN_OR_RETURN(
      int64_t c, rows_per_window({in_plane * es, out_plane * es, indices ? out_plane * uint64_t{4} : 0}, planes));
  const std::string shader = std::string(indices ? "pool_indices_" : "pool_") + dtype_name(in.dtype());
  // Channels-last float maps pool a 16-byte word of channels an invocation (WORDS in pool.comp)
  // where the channels fill whole words.
  const uint32_t vw = elements_per_word(in.dtype());
  const bool words_ok = channels_last && !indices && in.dtype() != DType::kI32 && s[1] % vw == 0;
  uint32_t spec[] = {mode, params.count_include_pad ? 1u : 0u, indices && indices->column_major ? 1u : 0u,
                     channels_last ? static_cast<uint32_t>(s[1]) : 1u, 0u};
  for (int64_t p0 = 0; p0 < planes; p0 += c) {
    const int64_t p1 = std::min(planes, p0 + c);
    RECON_ASSIGN_OR_RETURN(Window wi, window(in, p0 * in_plane, p1 * in_plane));
    RECON_ASSIGN_OR_RETURN(Window wo, window(out, p0 * out_plane, p1 * out_plane));
    std::optional<Window> wx;
    if (indices) {
      RECON_ASSIGN_OR_RETURN(wx, window(indices->arg, p0 * out_plane, p1 * out_plane));
    }
    const int64_t n = (p1 - p0) * out_plane;
    if (n > int64_t{0xffffffff}) return invalid_argument(std::string(name) + ": more than 2^32 outputs per dispatch");
    PoolPush push{static_cast<uint32_t>(p1 - p0),
                  static_cast<uint32_t>(s[2]),
                  static_cast<uint32_t>(s[3]),
                  static_cast<uint32_t>((*size)[0]),
                  static_cast<uint32_t>((*size)[1]),
                  static_cast<uint32_t>(params.kernel[0]),
                  static_cast<uint32_t>(params.kernel[1]),
                  static_cast<uint32_t>(stride_of(params, 0)),
                  static_cast<uint32_t>(stride_of(params, 1)),
                  static_cast<uint32_t>(params.pad[0]),
                  static_cast<uint32_t>(params.pad[1]),
                  wi.base,
                  wo.base,
                  static_cast<uint32_t>(pad_end_of(params, 0)),
                  static_cast<uint32_t>(pad_end_of(params, 1)),
                  wx ? wx->base : 0u,
                  static_cast<uint32_t>(p0),
                  static_cast<uint32_t>(params.dilation[0]),
                  static_cast<uint32_t>(params.dilation[1])};
    const bool words = words_ok && wi.base % vw == 0 && wo.base % vw == 0;
    spec[4] = words ? 1u : 0u;
    const uint64_t invocations = static_cast<uint64_t>(n) / (words ? vw : 1);
    const auto groups = Graph::grid_1d((invocations + kGroup - 1) / kGroup);
    const Binding read{wi.arg, Access::kRead}, write{wo.arg, Access::kWrite};
    RECON_RETURN_IF_ERROR(wx ? g.dispatch(shader, spec, {read, write, {wx->arg, Access::kWrite}}, push, groups)
                             : g.dispatch(shader, spec, {read, write}, push, groups));
  }
  return Status::ok();
}

}  // namespace

Result<std::array<int64_t, 2>> pool2d_output_size(int64_t h, int64_t w, const Pool2dParams& params) {
  std::array<int64_t, 2> in{h, w}, out{};
  for (int d = 0; d < 2; ++d) {
    const int64_t k = params.kernel[d], st = stride_of(params, d), pad = params.pad[d], pad_end = pad_end_of(params, d);
    if (k < 1 || st < 1 || params.dilation[d] < 1 || pad < 0 || params.stride[d] < 0) {
      return invalid_argument("pool2d: kernel, stride and dilation must be ≥ 1 and padding ≥ 0");
    }
    if (std::max(pad, pad_end) >= k) {
      return invalid_argument("pool2d: padding " + std::to_string(std::max(pad, pad_end)) +
                              " is not smaller than the kernel " + std::to_string(k));
    }
    const int64_t span = span_of(params, d);
    if (in[d] > kMaxExtent || span > kMaxExtent || st > kMaxExtent) {
      return invalid_argument("pool2d: sizes above 2^24 are not supported");
    }
    out[d] = out_extent(in[d], span, pad, pad_end, st, params.ceil_mode);
    if (out[d] < 1) {
      return invalid_argument("pool2d: a kernel of " + std::to_string(k) + " with padding " + std::to_string(pad) +
                              " does not fit an input of " + std::to_string(in[d]));
    }
  }
  return out;
}

Status max_pool2d(Graph& g, const Arg& in, const Arg& out, const Pool2dParams& params) {
  return pool(g, 0, "max_pool2d", in, out, params);
}

Status max_pool2d_with_indices(Graph& g, const Arg& in, const Arg& out, const Arg& indices, const Pool2dParams& params,
                               bool column_major) {
  return pool(g, 0, "max_pool2d", in, out, params, IndicesOut{indices, column_major});
}

Status max_pool2d_nhwc(Graph& g, const Arg& in, const Arg& out, const Pool2dParams& params) {
  return pool(g, 0, "max_pool2d_nhwc", in, out, params, std::nullopt, /*channels_last=*/true);
}

Status avg_pool2d_nhwc(Graph& g, const Arg& in, const Arg& out, const Pool2dParams& params) {
  return pool(g, 1, "avg_pool2d_nhwc", in, out, params, std::nullopt, /*channels_last=*/true);
}

Status avg_pool2d(Graph& g, const Arg& in, const Arg& out, const Pool2dParams& params) {
  return pool(g, 1, "avg_pool2d", in, out, params);
}

}  // namespace recon::gpu::ops
