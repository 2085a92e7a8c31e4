#include "gpu/ops/conv2d_grouped.h"

#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of shaders/conv2d_grouped.comp
constexpr int64_t kMaxExtent = 65535;

struct ConvGroupedPush {
  uint32_t n, cin_per_group, cout_per_group, cin, cout;
  uint32_t in_h, in_w, out_h, out_w, kernel_h, kernel_w;
  uint32_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
};
static_assert(sizeof(ConvGroupedPush) == 68, "mirrors Push in shaders/conv2d_grouped.comp");

}  // namespace

Result<Shape> conv2d_grouped_output_shape(const Shape& input, const Shape& weight, const Conv2dGroupedParams& p) {
  if (input.size() != 4 || weight.size() != 4) {
    return invalid_argument("conv2d_grouped: input " + shape_string(input) + " and weight " + shape_string(weight) +
                            " must be 4-D");
  }
  if (p.groups < 1 || p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1 || p.pad_top < 0 ||
      p.pad_left < 0 || p.pad_bottom < 0 || p.pad_right < 0) {
    return invalid_argument("conv2d_grouped: groups, strides and dilations must be ≥ 1 and pads ≥ 0");
  }
  const int64_t cin = input[1], cout = weight[0];
  if (cin % p.groups != 0 || cout % p.groups != 0 || weight[1] != cin / p.groups) {
    return invalid_argument("conv2d_grouped: input " + shape_string(input) + " and weight " + shape_string(weight) +
                            " do not split into " + std::to_string(p.groups) + " groups");
  }
  for (int64_t v : {input[2], input[3], weight[2], weight[3], p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,
                    p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}) {
    if (v > kMaxExtent) return invalid_argument("conv2d_grouped: sizes above 65535 are not supported");
  }
  const int64_t span_h = p.dilation_h * (weight[2] - 1) + 1, span_w = p.dilation_w * (weight[3] - 1) + 1;
  const int64_t h = input[2] + p.pad_top + p.pad_bottom, w = input[3] + p.pad_left + p.pad_right;
  if (weight[2] < 1 || weight[3] < 1 || span_h > h || span_w > w) {
    return invalid_argument("conv2d_grouped: kernel " + shape_string(weight) + " does not fit the padded input " +
                            shape_string(input));
  }
  return Shape{input[0], cout, (h - span_h) / p.stride_h + 1, (w - span_w) / p.stride_w + 1};
}

Status conv2d_grouped(Graph& g, const Arg& input, const Arg& weight, const std::optional<Arg>& bias, const Arg& out,
                      const Conv2dGroupedParams& p) {
  RECON_ASSIGN_OR_RETURN(Shape want, conv2d_grouped_output_shape(input.shape(), weight.shape(), p));
  if (out.shape() != want) {
    return invalid_argument("conv2d_grouped: out must be " + shape_string(want) + ", is " + shape_string(out.shape()));
  }
  const DType d = input.dtype();
  if ((d != DType::kF32 && d != DType::kF16) || weight.dtype() != d || out.dtype() != d ||
      (bias && bias->dtype() != d)) {
    return invalid_argument("conv2d_grouped: input, weight, bias and out must share one dtype (f32 or f16)");
  }
  if (bias && bias->numel() != want[1]) {
    return invalid_argument("conv2d_grouped: bias " + shape_string(bias->shape()) + " must have Cout elements");
  }
  for (const Arg* a : {&input, &weight, &out}) {
    if (a->bytes() > max_binding_bytes()) return invalid_argument("conv2d_grouped: an operand exceeds one binding");
  }
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  const Shape& s = input.shape();
  const Shape& w = weight.shape();
  ConvGroupedPush push{
      static_cast<uint32_t>(n),          static_cast<uint32_t>(w[1]),         static_cast<uint32_t>(w[0] / p.groups),
      static_cast<uint32_t>(s[1]),       static_cast<uint32_t>(w[0]),         static_cast<uint32_t>(s[2]),
      static_cast<uint32_t>(s[3]),       static_cast<uint32_t>(want[2]),      static_cast<uint32_t>(want[3]),
      static_cast<uint32_t>(w[2]),       static_cast<uint32_t>(w[3]),         static_cast<uint32_t>(p.stride_h),
      static_cast<uint32_t>(p.stride_w), static_cast<uint32_t>(p.dilation_h), static_cast<uint32_t>(p.dilation_w),
      static_cast<uint32_t>(p.pad_top),  static_cast<uint32_t>(p.pad_left)};
  const char* shader = d == DType::kF32 ? "conv2d_grouped_f32" : "conv2d_grouped_f16";
  const uint32_t spec[] = {bias ? 1u : 0u};
  return g.dispatch(
      shader, spec,
      {{input, Access::kRead}, {weight, Access::kRead}, {bias ? *bias : weight, Access::kRead}, {out, Access::kWrite}},
      push, Graph::grid_1d((static_cast<uint64_t>(n) + kGroup - 1) / kGroup));
}

}  // namespace recon::gpu::ops
