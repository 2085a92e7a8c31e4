#include "gpu/ops/conv2d_nhwc.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/ops/conv_images.h"
#include "gpu/ops/fast_divide.h"

namespace recon::gpu::ops {
namespace {

struct Conv2dNhwcPush {
  uint32_t batch, h, w, cin;
  uint32_t ho, wo, cout;
  uint32_t k;
  uint32_t off_in, off_w, off_out, off_r, off_bias;
  uint32_t flags;
  uint32_t div_plane, div_wo, div_cin, div_shifts;  // fast_divisor(Ho·Wo, Wo, Cin): magics, shifts
};
static_assert(sizeof(Conv2dNhwcPush) == 72,
              "mirrors Push in shaders/conv2d_nhwc.comp and shaders/conv2d_nhwc_coopmat.comp");

constexpr int64_t kU32Max = 0xffffffffLL;

const char* shader_name(const GemmTiling& tiling, DType dtype) {
  const bool f32 = dtype == DType::kF32;
  if (tiling.coopmat) return f32 ? "conv2d_nhwc_coopmat_f32" : "conv2d_nhwc_coopmat_f16";
  if (tiling.splits > 1) return f32 ? "conv2d_nhwc_split_f32" : "conv2d_nhwc_split_f16";
  return f32 ? "conv2d_nhwc_f32" : "conv2d_nhwc_f16";
}

}  // namespace

Result<Shape> conv2d_nhwc_output_shape(const Shape& in, const Shape& w, const Conv2dParams& p, ConvInput layout) {
  const bool planar = layout == ConvInput::kPlanar;
  if (in.size() != 4 || w.size() != 4) {
    const char* input = planar ? "[B,Cin,H,W]" : "[B,H,W,Cin]";
    return invalid_argument("conv2d_nhwc: expects input " + std::string(input) + " and weight [Cout,KH,KW,Cin], got " +
                            shape_string(in) + " and " + shape_string(w));
  }
  // The NCHW rules on the same sizes.
  const Shape nchw_in = planar ? in : Shape{in[0], in[3], in[1], in[2]};
  RECON_ASSIGN_OR_RETURN(const Shape nchw, conv2d_output_shape(nchw_in, {w[0], w[3], w[1], w[2]}, p));
  return Shape{nchw[0], nchw[2], nchw[3], nchw[1]};
}

Status conv2d_nhwc(Graph& g, const Capabilities& caps, const Arg& input, const Arg& weight,
                   const std::optional<Arg>& bias, const Arg& out, const Conv2dParams& p, const Epilogue& epilogue,
                   GemmPath path, ConvInput input_layout) {
  const bool planar = input_layout == ConvInput::kPlanar;
  RECON_ASSIGN_OR_RETURN(const Shape want, conv2d_nhwc_output_shape(input.shape(), weight.shape(), p, input_layout));
  if (out.shape() != want) {
    return invalid_argument("conv2d_nhwc: output " + shape_string(out.shape()) + " should be " + shape_string(want));
  }
  const DType dtype = out.dtype();
  if (input.dtype() != dtype || weight.dtype() != dtype || (bias && bias->dtype() != dtype) ||
      (epilogue.residual && epilogue.residual->dtype() != dtype)) {
    return invalid_argument("conv2d_nhwc: all operands must share one dtype");
  }
  if (operands_overlap(out, input) || operands_overlap(out, weight)) {
    return invalid_argument("conv2d_nhwc: the output overlaps the input or the weights");
  }
  const int64_t batch = want[0], ho = want[1], wo = want[2], cout = want[3];
  const Shape& is = input.shape();
  const int64_t h = is[planar ? 2 : 1], w = is[planar ? 3 : 2], cin = is[planar ? 1 : 3];
  const int64_t kh = weight.shape()[1], kw = weight.shape()[2];
  if (bias && bias->shape() != Shape{cout}) {
    return invalid_argument("conv2d_nhwc: bias " + shape_string(bias->shape()) + " should be [" + std::to_string(cout) +
                            "]");
  }
  if (p.input_relu) return invalid_argument("conv2d_nhwc: input_relu is for the NCHW convolution");
  if (epilogue.rope) return invalid_argument("conv2d_nhwc: the RoPE epilogue is for linear layers");
  if (epilogue.residual && epilogue.residual->shape() != want) {
    return invalid_argument("conv2d_nhwc: residual " + shape_string(epilogue.residual->shape()) +
                            " differs from output " + shape_string(want));
  }
  if (kh == 1 && kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0 && !planar) {
    // [B·H·W, Cin] · [Cout, Cin]ᵀ: the pixels are the rows of a plain matmul.
    MatmulGeometry geo;
    geo.m = batch * h * w, geo.n = cout, geo.k = cin;
    geo.lda = std::max<int64_t>(cin, 1), geo.ldb = std::max<int64_t>(cin, 1), geo.ldc = std::max<int64_t>(cout, 1);
    MatmulOptions opt;
    opt.transpose_b = true;
    opt.bias = bias;
    opt.epilogue = epilogue;
    opt.path = path;
    return matmul_strided(g, caps, input, weight, out, geo, opt).with_context("conv2d_nhwc 1x1");
  }

  const int64_t k = kh * kw * cin, pixels = ho * wo;
  for (int64_t v : {input.numel(), out.numel(), weight.numel()}) {
    if (v > kU32Max) return invalid_argument("conv2d_nhwc: size beyond 32 bits");
  }
  // The gather's divisions (fast_divide) hold below 2^31.
  if (k > INT32_MAX || batch * pixels > INT32_MAX) return invalid_argument("conv2d_nhwc: K or pixels beyond 2^31");
  if (batch == 0 || cout == 0 || pixels == 0) return Status::ok();

  // Whole images per dispatch so that input, output and residual windows fit one binding (the
  // images are rows of the grid, not its layers: no limit of their own).
  const ConvImageSizes sizes{h * w * cin, pixels * cout};
  RECON_ASSIGN_OR_RETURN(int64_t bc, conv_images_per_dispatch(caps, "conv2d_nhwc", input, weight, out,
                                                              epilogue.residual, sizes, batch, batch));
  RECON_ASSIGN_OR_RETURN(GemmTiling tiling,
                         choose_gemm_tiling(caps, dtype, bc * pixels, cout, k, path, /*b_row_major=*/false));
  // The grid's rows hold every image's pixels: as many images a dispatch as its x dimension takes
  // (lavapipe's is 65,535 workgroups: 4 M pixels of 64-row tiles).
  bc = std::min(bc, int64_t{caps.max_workgroup_count[0]} * tiling.bm / pixels);
  if (bc < 1 || tiling.groups(pixels, cout, 1)[1] > caps.max_workgroup_count[1]) {
    return invalid_argument("conv2d_nhwc: output " + shape_string(want) +
                            " needs more workgroups than the device allows");
  }
  GemmSplitK split;  // one dispatch only: the chunks would share the workspace
  if (bc == batch) {
    RECON_ASSIGN_OR_RETURN(split, GemmSplitK::plan(g, caps, tiling, batch * pixels, cout, k, 1));
  }
  uint32_t flags = static_cast<uint32_t>(epilogue.activation);
  if (bias) flags |= kGemmFlagBias;
  if (epilogue.residual) flags |= kGemmFlagResidual;
  if (epilogue.residual && epilogue.residual_first) flags |= kGemmFlagResidualFirst;

  std::vector<uint32_t> spec;
  for (uint32_t s : tiling.spec()) spec.push_back(s);
  for (int64_t v : {kh, kw, p.stride_h, p.stride_w, p.pad_h, p.pad_w}) spec.push_back(static_cast<uint32_t>(v));
  // The tensor-core shader's VEC_A and VEC_OUT (set per dispatch) and VEC_B, then IN_PLANAR.
  const size_t vec_at = spec.size();
  if (tiling.coopmat) spec.insert(spec.end(), {0u, k % 8 == 0 ? 1u : 0u, 0u});
  spec.push_back(planar ? 1u : 0u);
  for (int64_t b0 = 0; b0 < batch; b0 += bc) {
    const int64_t nb = std::min(bc, batch - b0);
    RECON_ASSIGN_OR_RETURN(const ConvImageWindows windows,
                           conv_image_windows(caps, input, out, epilogue.residual, sizes, b0, nb));
    const auto& [win, wout, wres] = windows;
    Conv2dNhwcPush push{};
    push.batch = static_cast<uint32_t>(nb);
    push.h = static_cast<uint32_t>(h);
    push.w = static_cast<uint32_t>(w);
    push.cin = static_cast<uint32_t>(cin);
    push.ho = static_cast<uint32_t>(ho);
    push.wo = static_cast<uint32_t>(wo);
    push.cout = static_cast<uint32_t>(cout);
    push.k = static_cast<uint32_t>(k);
    push.off_in = static_cast<uint32_t>(win.offset);
    push.off_out = static_cast<uint32_t>(wout.offset);
    push.off_r = wres ? static_cast<uint32_t>(wres->offset) : 0;
    push.flags = flags;
    const FastDivisor plane = fast_divisor(static_cast<uint32_t>(pixels)),
                      row = fast_divisor(static_cast<uint32_t>(wo)),
                      tap = fast_divisor(static_cast<uint32_t>(std::max<int64_t>(cin, 1)));
    push.div_plane = plane.magic, push.div_wo = row.magic, push.div_cin = tap.magic;
    push.div_shifts = plane.shift | row.shift << 8 | tap.shift << 16;
    // Vector access: channels of one pixel, as many as the core's vector width.
    const int64_t width = tiling.vector_width();
    const bool vec_a = !planar && cin % width == 0 && win.offset % width == 0;
    const bool vec_out = cout % width == 0 && wout.offset % width == 0 && (!wres || wres->offset % width == 0);
    if (tiling.coopmat) {
      spec[vec_at] = vec_a;
      spec[vec_at + 2] = vec_out;
    } else {
      tiling.vec = (vec_a ? kGemmVecA : 0) | (k % 4 == 0 ? kGemmVecB : 0) | (vec_out ? kGemmVecC : 0);
      spec[7] = tiling.vec;
    }
    const Arg& bias_arg = bias ? *bias : weight;  // unused bindings get a dummy
    const Arg& res_arg = wres ? wres->arg : weight;
    RECON_RETURN_IF_ERROR(g.dispatch(shader_name(tiling, dtype), spec,
                                     {{win.arg, Access::kRead},
                                      {weight, Access::kRead},
                                      {wout.arg, Access::kWrite},
                                      {bias_arg, Access::kRead},
                                      {res_arg, Access::kRead},
                                      split.partials(weight),
                                      split.arrivals(weight)},
                                     push, tiling.groups(nb * pixels, cout, 1)));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
