#include "gpu/ops/conv2d.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gpu/ops/conv_images.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/wide_access.h"

namespace recon::gpu::ops {
namespace {

struct Conv2dPush {
  uint32_t cin, h, w;
  uint32_t cout, ho, wo;
  uint32_t k;
  uint32_t stride_in, stride_out;
  uint32_t off_in, off_w, off_out, off_r, off_bias;
  uint32_t flags;
};
static_assert(sizeof(Conv2dPush) == 60, "mirrors Push in shaders/conv2d.comp and shaders/conv2d_coopmat.comp");

constexpr int64_t kU32Max = 0xffffffffLL;

// A weight's shape as [Cout, Cin, KH, KW], whichever layout stores it.
Shape oihw_shape(const Shape& w, ConvWeightLayout layout) {
  if (layout == ConvWeightLayout::kOIHW || w.size() != 4) return w;
  return {w[0], w[3], w[1], w[2]};
}

// A 1×1 convolution over the input as it is (stride 1, no padding, no input_relu): a matmul of the
// weights with each image, whichever kernel runs it.
bool pointwise(const Shape& weight, const Conv2dParams& p) {
  return weight[2] == 1 && weight[3] == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0 &&
         !p.input_relu;
}

struct PointwiseFewPush {
  uint32_t cin, plane_words, batch;
  uint32_t base_in, base_w, base_out, base_bias;
  uint32_t flags;
};
static_assert(sizeof(PointwiseFewPush) == 32, "mirrors Push in shaders/conv_pointwise_few.comp");

// The pointwise route (conv2d_pointwise_few), where it applies: returns false (and records
// nothing) where it does not, also for an operand beyond one binding or off a word boundary.
// `wshape` is the weight's shape as [Cout, Cin, KH, KW]; a 1×1 weight is the same bytes in both layouts.
Result<bool> try_pointwise_few(Graph& g, const Capabilities& caps, const Arg& input, const Arg& weight,
                               const Shape& wshape, const std::optional<Arg>& bias, const Arg& out,
                               const Conv2dParams& params, const Epilogue& epilogue) {
  const Shape& s = input.shape();
  const int64_t batch = s[0], cin = s[1], plane = s[2] * s[3], cout = wshape[0];
  const uint32_t vw = elements_per_word(out.dtype());
  if (!conv2d_pointwise_few(input.shape(), wshape, out.dtype(), params, epilogue.residual.has_value()) ||
      batch * plane / vw > kU32Max) {
    return false;
  }
  const uint64_t limit = std::min<uint64_t>(caps.max_storage_buffer_range, max_binding_bytes());
  for (const Arg* a : {&input, &weight, &out}) {
    if (a->bytes() + kBindingOffsetAlign > limit) return false;
  }
  RECON_ASSIGN_OR_RETURN(Window wi, window(input, 0, input.numel()));
  RECON_ASSIGN_OR_RETURN(Window ww, window(weight, 0, weight.numel()));
  RECON_ASSIGN_OR_RETURN(Window wo, window(out, 0, out.numel()));
  if (wi.base % vw != 0 || wo.base % vw != 0) return false;
  Window wb{ww.arg, 0};  // bound as a dummy without a bias
  if (bias) {
    RECON_ASSIGN_OR_RETURN(wb, window(*bias, 0, bias->numel()));
  }
  const PointwiseFewPush push{static_cast<uint32_t>(cin),
                              static_cast<uint32_t>(plane / vw),
                              static_cast<uint32_t>(batch),
                              wi.base,
                              ww.base,
                              wo.base,
                              wb.base,
                              static_cast<uint32_t>(epilogue.activation) | (bias ? kGemmFlagBias : 0u)};
  const uint32_t spec[] = {static_cast<uint32_t>(cout)};
  const char* shader = out.dtype() == DType::kF32 ? "conv_pointwise_few_f32" : "conv_pointwise_few_f16";
  RECON_RETURN_IF_ERROR(
      g.dispatch(shader, spec,
                 {{wi.arg, Access::kRead}, {ww.arg, Access::kRead}, {wo.arg, Access::kWrite}, {wb.arg, Access::kRead}},
                 push, {grid_stride_groups(static_cast<uint64_t>(batch * plane / vw)), 1, 1}));
  return true;
}

}  // namespace

Result<Shape> conv2d_output_shape(const Shape& in, const Shape& w, const Conv2dParams& p) {
  if (in.size() != 4 || w.size() != 4) {
    return invalid_argument("conv2d: expects input [B,Cin,H,W] and weight [Cout,Cin,KH,KW], got " + shape_string(in) +
                            " and " + shape_string(w));
  }
  if (w[1] != in[1]) {
    return invalid_argument("conv2d: weight " + shape_string(w) + " does not take " + std::to_string(in[1]) +
                            " input channels");
  }
  if (p.stride_h < 1 || p.stride_w < 1 || p.pad_h < 0 || p.pad_w < 0 || w[2] < 1 || w[3] < 1) {
    return invalid_argument("conv2d: stride must be >= 1, padding >= 0, kernel >= 1");
  }
  if (in[2] + 2 * p.pad_h < w[2] || in[3] + 2 * p.pad_w < w[3]) {
    return invalid_argument("conv2d: kernel " + shape_string(w) + " larger than the padded input " + shape_string(in));
  }
  return Shape{in[0], w[0], (in[2] + 2 * p.pad_h - w[2]) / p.stride_h + 1,
               (in[3] + 2 * p.pad_w - w[3]) / p.stride_w + 1};
}

bool conv2d_pointwise_few(const Shape& in, const Shape& w, DType dtype, const Conv2dParams& p, bool residual) {
  return pointwise(w, p) && w[0] <= kConv2dPointwiseFewMaxCout && !residual &&
         (in[2] * in[3]) % elements_per_word(dtype) == 0;
}

ConvWeightLayout conv2d_preferred_layout(const Capabilities& caps, const Shape& w) {
  const bool ohwi = w.size() == 4 && coopmat_gemm_available(caps) && w[2] * w[3] > 1 && w[1] % 16 == 0;
  return ohwi ? ConvWeightLayout::kOHWI : ConvWeightLayout::kOIHW;
}

bool conv2d_b_in_words(int64_t w, int64_t kw, const Conv2dParams& params) {
  return params.stride_w == 1 && w % 8 == 0 && ((kw == 3 && params.pad_w == 1) || (kw == 1 && params.pad_w == 0));
}

Status conv2d(Graph& g, const Capabilities& caps, const Arg& input, const Arg& weight, const std::optional<Arg>& bias,
              const Arg& out, const Conv2dParams& p, const Epilogue& epilogue, GemmPath path, ConvWeightLayout layout) {
  const Shape wshape = oihw_shape(weight.shape(), layout);
  Result<Shape> shape = conv2d_output_shape(input.shape(), wshape, p);
  if (!shape.is_ok() && layout == ConvWeightLayout::kOHWI) {
    return shape.status().with_context("weight stored [Cout,KH,KW,Cin] as " + shape_string(weight.shape()));
  }
  RECON_ASSIGN_OR_RETURN(Shape want, std::move(shape));
  if (out.shape() != want) {
    return invalid_argument("conv2d: output " + shape_string(out.shape()) + " should be " + shape_string(want));
  }
  const DType dtype = out.dtype();
  if (input.dtype() != dtype || weight.dtype() != dtype || (bias && bias->dtype() != dtype) ||
      (epilogue.residual && epilogue.residual->dtype() != dtype)) {
    return invalid_argument("conv2d: all operands must share one dtype");
  }
  const int64_t batch = want[0], cin = input.shape()[1], h = input.shape()[2], w = input.shape()[3];
  const int64_t cout = want[1], ho = want[2], wo = want[3], kh = wshape[2], kw = wshape[3];
  if (operands_overlap(out, input) || operands_overlap(out, weight)) {
    return invalid_argument("conv2d: the output overlaps the input or the weights");
  }
  if (bias && bias->shape() != Shape{cout}) {
    return invalid_argument("conv2d: bias " + shape_string(bias->shape()) + " should be [" + std::to_string(cout) +
                            "]");
  }
  if (epilogue.rope) return invalid_argument("conv2d: the RoPE epilogue is for linear layers");
  if (epilogue.residual && epilogue.residual->shape() != want) {
    return invalid_argument("conv2d: residual " + shape_string(epilogue.residual->shape()) + " differs from output " +
                            shape_string(want));
  }
  if (pointwise(wshape, p)) {
    if (path != GemmPath::kScalar && path != GemmPath::kCoopMat && batch > 0 && cin > 0 && h * w > 0) {
      RECON_ASSIGN_OR_RETURN(const bool done,
                             try_pointwise_few(g, caps, input, weight, wshape, bias, out, p, epilogue));
      if (done) return Status::ok();
    }
    // Pointwise: out[b] (Cout × HW) = W (Cout × Cin) · in[b] (Cin × HW), weights broadcast.
    MatmulGeometry geo;
    geo.m = cout, geo.n = h * w, geo.k = cin, geo.batch = batch;
    geo.lda = std::max<int64_t>(cin, 1), geo.ldb = std::max<int64_t>(h * w, 1), geo.ldc = std::max<int64_t>(h * w, 1);
    geo.stride_a = 0, geo.stride_b = cin * h * w, geo.stride_c = cout * h * w;
    MatmulOptions opt;
    opt.bias = bias;
    opt.bias_per_row = true;
    opt.epilogue = epilogue;
    opt.path = path;
    auto s = matmul_strided(g, caps, weight, input, out, geo, opt);
    return s.with_context("conv2d 1x1");
  }

  const int64_t k = cin * kh * kw, npix = ho * wo;
  for (int64_t v : {input.numel(), out.numel(), weight.numel(), k, kh, kw, p.stride_h, p.stride_w, p.pad_h, p.pad_w}) {
    if (v > kU32Max) return invalid_argument("conv2d: size beyond 32 bits");
  }
  if (batch == 0 || cout == 0 || npix == 0) return Status::ok();
  // B (the gathered input, [K][pixels]) is row-major; the fp16 tile below is fixed whatever the flag.
  RECON_ASSIGN_OR_RETURN(GemmTiling tiling,
                         choose_gemm_tiling(caps, dtype, cout, npix, k, path, /*b_row_major=*/true, batch));
  if (tiling.coopmat && !tiling.split && tiling.bm == 128 && tiling.bn == 128) {
    // The gathered (im2col) B slices cost registers: at BK = 32 the 128×128 tile holds one workgroup
    // per SM, and the DPT convolutions measured slower than at BK = 16 (H200, Conv2dTest.
    // CoopMatTileSweep: head.2 3×3 at 384×512 880 vs 611 µs), unlike the plain GEMMs. Two slices of
    // loads in flight beat one there by 3–8 % (611 vs 630 µs; refinenet RCU at 96×128 193 vs 209).
    tiling.bk = 16, tiling.prefetch = 2;
  }
  const auto grid = tiling.groups(cout, npix, 1);
  if (grid[0] > caps.max_workgroup_count[0] || grid[1] > caps.max_workgroup_count[1]) {
    return invalid_argument("conv2d: output " + shape_string(want) + " needs more workgroups than the device allows");
  }

  // Whole images per dispatch so that input, output and residual windows fit one binding.
  const ConvImageSizes sizes{cin * h * w, cout * npix};
  RECON_ASSIGN_OR_RETURN(const int64_t bc,
                         conv_images_per_dispatch(caps, "conv2d", input, weight, out, epilogue.residual, sizes, batch,
                                                  caps.max_workgroup_count[2]));

  uint32_t flags = static_cast<uint32_t>(epilogue.activation);
  if (bias) flags |= kGemmFlagBias;
  if (epilogue.residual) flags |= kGemmFlagResidual;
  if (epilogue.residual && epilogue.residual_first) flags |= kGemmFlagResidualFirst;
  if (p.input_relu) flags |= kGemmFlagInputRelu;
  const char* shader = tiling.coopmat ? (dtype == DType::kF32 ? "conv2d_coopmat_f32" : "conv2d_coopmat_f16")
                                      : (dtype == DType::kF32 ? "conv2d_f32" : "conv2d_f16");
  GemmSplitK split;  // one dispatch only: see matmul_strided
  if (bc == batch) {
    RECON_ASSIGN_OR_RETURN(split, GemmSplitK::plan(g, caps, tiling, cout, npix, k, batch));
  }
  if (!tiling.coopmat && tiling.splits > 1) shader = dtype == DType::kF32 ? "conv2d_split_f32" : "conv2d_split_f16";
  const bool vec_a = k % 8 == 0;  // weight rows start at multiples of 8
  std::vector<uint32_t> spec;
  for (uint32_t s : tiling.spec()) spec.push_back(s);
  for (int64_t v : {kh, kw, p.stride_h, p.stride_w, p.pad_h, p.pad_w}) spec.push_back(static_cast<uint32_t>(v));
  const size_t vec_out_at = spec.size() + 1;
  if (tiling.coopmat) {
    spec.push_back(vec_a ? 1 : 0);  // VEC_A
    spec.push_back(0);              // VEC_OUT: set per dispatch below
    spec.push_back(0);              // VEC_B: likewise
  }
  spec.push_back(layout == ConvWeightLayout::kOHWI ? static_cast<uint32_t>(cin) : 0u);  // TAP_CIN
  const bool words_b = conv2d_b_in_words(w, kw, p);
  for (int64_t b0 = 0; b0 < batch; b0 += bc) {
    const int64_t nb = std::min(bc, batch - b0);
    RECON_ASSIGN_OR_RETURN(const ConvImageWindows windows,
                           conv_image_windows(caps, input, out, epilogue.residual, sizes, b0, nb));
    const auto& [win, wout, wres] = windows;
    Conv2dPush push{};
    push.cin = static_cast<uint32_t>(cin);
    push.h = static_cast<uint32_t>(h);
    push.w = static_cast<uint32_t>(w);
    push.cout = static_cast<uint32_t>(cout);
    push.ho = static_cast<uint32_t>(ho);
    push.wo = static_cast<uint32_t>(wo);
    push.k = static_cast<uint32_t>(k);
    push.stride_in = static_cast<uint32_t>(sizes.in);
    push.stride_out = static_cast<uint32_t>(sizes.out);
    push.off_in = static_cast<uint32_t>(win.offset);
    push.off_w = 0;
    push.off_out = static_cast<uint32_t>(wout.offset);
    push.off_r = wres ? static_cast<uint32_t>(wres->offset) : 0;
    push.off_bias = 0;
    push.flags = flags;
    // Vector epilogue stores: output and residual rows start at multiples of the core's vector width.
    const int64_t width = tiling.vector_width();
    const bool vec_out =
        npix % width == 0 && sizes.out % width == 0 && wout.offset % width == 0 && (!wres || wres->offset % width == 0);
    if (tiling.coopmat) {
      const size_t at = vec_out_at;  // VEC_OUT, VEC_B
      spec[at] = vec_out;
      spec[at + 1] = words_b && win.offset % 8 == 0;
    } else {
      tiling.vec = (k % 4 == 0 ? kGemmVecA : 0) | (vec_out ? kGemmVecC : 0);
      spec[7] = tiling.vec;
    }
    const Arg& bias_arg = bias ? *bias : weight;  // unused bindings get a dummy
    const Arg& res_arg = wres ? wres->arg : weight;
    RECON_RETURN_IF_ERROR(g.dispatch(shader, spec,
                                     {{win.arg, Access::kRead},
                                      {weight, Access::kRead},
                                      {wout.arg, Access::kWrite},
                                      {bias_arg, Access::kRead},
                                      {res_arg, Access::kRead},
                                      split.partials(weight),
                                      split.arrivals(weight)},
                                     push, tiling.groups(cout, npix, nb)));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
