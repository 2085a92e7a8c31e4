#include "gpu/ops/linear.h"

#include <algorithm>
#include <string>

namespace recon::gpu::ops {

Status linear(Graph& g, const Capabilities& caps, const Arg& x, const Arg& weight, const std::optional<Arg>& bias,
              const Arg& out, const Epilogue& epilogue, GemmPath path, WeightLayout layout) {
  const bool in_out = layout == WeightLayout::kInOut;
  const Shape &sx = x.shape(), &sw = weight.shape(), &so = out.shape();
  const std::string what =
      shape_string(sx) + " x " + shape_string(sw) + (in_out ? "" : "^T") + " -> " + shape_string(so);
  if (sw.size() != 2 || sx.empty() || so.size() != sx.size()) {
    const char* expected = in_out ? "linear: expects x [..., K], weight [K, N], out [..., N]; got "
                                  : "linear: expects x [..., K], weight [N, K], out [..., N]; got ";
    return invalid_argument(expected + what);
  }
  const int64_t n = in_out ? sw[1] : sw[0], k = in_out ? sw[0] : sw[1];
  if (sx.back() != k || so.back() != n || !std::equal(sx.begin(), sx.end() - 1, so.begin())) {
    return invalid_argument("linear: shapes " + what + " do not agree");
  }
  if (bias && bias->shape() != Shape{n}) {
    return invalid_argument("linear: bias " + shape_string(bias->shape()) + " should be [" + std::to_string(n) + "]");
  }
  if (epilogue.residual && epilogue.residual->shape() != so) {
    return invalid_argument("linear: residual " + shape_string(epilogue.residual->shape()) + " differs from out " +
                            shape_string(so));
  }
  MatmulGeometry geo;
  geo.m = k > 0 ? x.numel() / k : out.numel() / std::max<int64_t>(n, 1);
  geo.n = n;
  geo.k = k;
  geo.lda = std::max<int64_t>(k, 1);
  geo.ldb = std::max<int64_t>(in_out ? n : k, 1);
  geo.ldc = std::max<int64_t>(n, 1);
  MatmulOptions opt;
  opt.transpose_b = !in_out;
  opt.bias = bias;
  opt.epilogue = epilogue;
  opt.path = path;
  return matmul_strided(g, caps, x, weight, out, geo, opt);
}

}  // namespace recon::gpu::ops
