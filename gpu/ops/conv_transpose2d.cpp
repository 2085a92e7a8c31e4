#include "gpu/ops/conv_transpose2d.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gpu/ops/conv_images.h"

namespace recon::gpu::ops {
namespace {

struct ConvTranspose2dPush {
  uint32_t cin, h, w, cout;
  uint32_t stride_in, stride_out;
  uint32_t off_in, off_w, off_out, off_r, off_bias;
  uint32_t flags;
};
static_assert(sizeof(ConvTranspose2dPush) == 48,
              "mirrors Push in shaders/conv_transpose2d.comp and shaders/conv_transpose2d_coopmat.comp");

constexpr int64_t kU32Max = 0xffffffffLL;

}  // namespace

Status conv_transpose2d(Graph& g, const Capabilities& caps, const Arg& input, const Arg& weight,
                        const std::optional<Arg>& bias, const Arg& out, const Epilogue& epilogue, GemmPath path) {
  const Shape &si = input.shape(), &sw = weight.shape();
  if (epilogue.residual_first) return invalid_argument("conv_transpose2d: the activation comes before the residual");
  if (si.size() != 4 || sw.size() != 4 || sw[0] != si[1] || sw[2] < 1 || sw[3] < 1) {
    return invalid_argument("conv_transpose2d: expects input [B,Cin,H,W] and weight [Cin,Cout,KH,KW], got " +
                            shape_string(si) + " and " + shape_string(sw));
  }
  const int64_t batch = si[0], cin = si[1], h = si[2], w = si[3], cout = sw[1], kh = sw[2], kw = sw[3];
  const Shape want{batch, cout, h * kh, w * kw};
  if (out.shape() != want) {
    return invalid_argument("conv_transpose2d: output " + shape_string(out.shape()) + " should be " +
                            shape_string(want) + " (stride = kernel)");
  }
  const DType dtype = out.dtype();
  if (input.dtype() != dtype || weight.dtype() != dtype || (bias && bias->dtype() != dtype) ||
      (epilogue.residual && epilogue.residual->dtype() != dtype)) {
    return invalid_argument("conv_transpose2d: all operands must share one dtype");
  }
  if (operands_overlap(out, input) || operands_overlap(out, weight)) {
    return invalid_argument("conv_transpose2d: the output overlaps the input or the weights");
  }
  if (bias && bias->shape() != Shape{cout}) {
    return invalid_argument("conv_transpose2d: bias " + shape_string(bias->shape()) + " should be [" +
                            std::to_string(cout) + "]");
  }
  if (epilogue.rope) return invalid_argument("conv_transpose2d: the RoPE epilogue is for linear layers");
  if (epilogue.residual && epilogue.residual->shape() != want) {
    return invalid_argument("conv_transpose2d: residual " + shape_string(epilogue.residual->shape()) +
                            " differs from output " + shape_string(want));
  }
  for (int64_t v : {input.numel(), out.numel(), weight.numel()}) {
    if (v > kU32Max) return invalid_argument("conv_transpose2d: size beyond 32 bits");
  }
  const int64_t m = cout * kh * kw, npix = h * w;
  if (batch == 0 || m == 0 || npix == 0) return Status::ok();
  // B is the input image, [Cin, H·W]: stored [K, N] as the NCHW convolution's, whose tile rules it
  // follows (it had taken the rules of B stored [N, K], measured on channels-last convolutions).
  RECON_ASSIGN_OR_RETURN(GemmTiling tiling,
                         choose_gemm_tiling(caps, dtype, m, npix, cin, path, /*b_row_major=*/true, batch));
  const auto grid = tiling.groups(m, npix, 1);
  if (grid[0] > caps.max_workgroup_count[0] || grid[1] > caps.max_workgroup_count[1]) {
    return invalid_argument("conv_transpose2d: " + shape_string(want) +
                            " needs more workgroups than the device allows");
  }

  const ConvImageSizes sizes{cin * npix, cout * kh * kw * npix};
  RECON_ASSIGN_OR_RETURN(
      const int64_t bc, conv_images_per_dispatch(caps, "conv_transpose2d", input, weight, out, epilogue.residual, sizes,
                                                 batch, caps.max_workgroup_count[2]));

  uint32_t flags = static_cast<uint32_t>(epilogue.activation);
  if (bias) flags |= kGemmFlagBias;
  if (epilogue.residual) flags |= kGemmFlagResidual;
  const char* shader = tiling.coopmat
                           ? (dtype == DType::kF32 ? "conv_transpose2d_coopmat_f32" : "conv_transpose2d_coopmat_f16")
                           : (dtype == DType::kF32 ? "conv_transpose2d_f32" : "conv_transpose2d_f16");

  for (int64_t b0 = 0; b0 < batch; b0 += bc) {
    const int64_t nb = std::min(bc, batch - b0);
    RECON_ASSIGN_OR_RETURN(const ConvImageWindows windows,
                           conv_image_windows(caps, input, out, epilogue.residual, sizes, b0, nb));
    const auto& [win, wout, wres] = windows;
    ConvTranspose2dPush push{};
    push.cin = static_cast<uint32_t>(cin);
    push.h = static_cast<uint32_t>(h);
    push.w = static_cast<uint32_t>(w);
    push.cout = static_cast<uint32_t>(cout);
    push.stride_in = static_cast<uint32_t>(sizes.in);
    push.stride_out = static_cast<uint32_t>(sizes.out);
    push.off_in = static_cast<uint32_t>(win.offset);
    push.off_w = 0;
    push.off_out = static_cast<uint32_t>(wout.offset);
    push.off_r = wres ? static_cast<uint32_t>(wres->offset) : 0;
    push.off_bias = 0;
    push.flags = flags;

    std::vector<uint32_t> spec;
    for (uint32_t s : tiling.spec()) spec.push_back(s);
    spec.push_back(static_cast<uint32_t>(kh));
    spec.push_back(static_cast<uint32_t>(kw));
    if (tiling.coopmat) {
      spec.push_back(m % 8 == 0 ? 1 : 0);                            // VEC_A: weight rows
      spec.push_back(npix % 8 == 0 && win.offset % 8 == 0 ? 1 : 0);  // VEC_B: input rows
    }
    const Arg& bias_arg = bias ? *bias : weight;  // unused bindings get a dummy
    const Arg& res_arg = wres ? wres->arg : weight;
    RECON_RETURN_IF_ERROR(g.dispatch(shader, spec,
                                     {{win.arg, Access::kRead},
                                      {weight, Access::kRead},
                                      {wout.arg, Access::kWrite},
                                      {bias_arg, Access::kRead},
                                      {res_arg, Access::kRead},
                                      {weight, Access::kRead},   // gemm_coopmat.glsl's split-K
                                      {weight, Access::kRead}},  // bindings, unused
                                     push, tiling.groups(m, npix, nb)));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
