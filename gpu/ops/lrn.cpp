#include "gpu/ops/lrn.h"

#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of shaders/lrn.comp

struct LrnPush {
  uint32_t n, channels, inner, before, after;
  float alpha_over_size, beta, bias;
};
static_assert(sizeof(LrnPush) == 32, "mirrors Push in shaders/lrn.comp");

}  // namespace

Status lrn(Graph& g, const Arg& in, const Arg& out, const LrnParams& p) {
  const Shape& s = in.shape();
  if (s.size() < 2 || out.shape() != s) {
    return invalid_argument("lrn: in " + shape_string(s) + " must be [N, C, ...] and out " + shape_string(out.shape()) +
                            " alike");
  }
  if (in.dtype() != out.dtype() || (in.dtype() != DType::kF32 && in.dtype() != DType::kF16)) {
    return invalid_argument(std::string("lrn: dtypes ") + dtype_name(in.dtype()) + " -> " + dtype_name(out.dtype()) +
                            " (f32 or f16, equal)");
  }
  if (p.size < 1 || p.size > 65535) return invalid_argument("lrn: size must be in [1, 65535]");
  if (in.bytes() > max_binding_bytes()) return invalid_argument("lrn: in and out must each fit one binding");
  const int64_t n = in.numel();
  if (n == 0) return Status::ok();
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  LrnPush push{static_cast<uint32_t>(n),
               static_cast<uint32_t>(s[1]),
               static_cast<uint32_t>(inner),
               static_cast<uint32_t>((p.size - 1) / 2),
               static_cast<uint32_t>(p.size / 2),
               p.alpha / static_cast<float>(p.size),
               p.beta,
               p.bias};
  const char* shader = in.dtype() == DType::kF32 ? "lrn_f32" : "lrn_f16";
  return g.dispatch(shader, {}, {{in, Access::kRead}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(n) + kGroup - 1) / kGroup));
}

}  // namespace recon::gpu::ops
