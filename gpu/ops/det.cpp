#include "gpu/ops/det.h"

#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kDetGroup = 64;  // local_size_x of shaders/det.comp

struct DetPush {
  uint32_t batch, n;
};
static_assert(sizeof(DetPush) == 8, "mirrors Push in shaders/det.comp");

}  // namespace

Status det(Graph& g, const Arg& in, const Arg& out, const Arg& work) {
  const Shape& s = in.shape();
  const bool square = s.size() >= 2 && s[s.size() - 1] == s[s.size() - 2];
  if (!square || out.shape() != Shape(s.begin(), s.end() - 2) || work.numel() != in.numel()) {
    return invalid_argument("det: in " + shape_string(s) + ", out " + shape_string(out.shape()) + " and work " +
                            shape_string(work.shape()) + " (in [..., n, n], out [...], work of in's size)");
  }
  const bool float_ok = in.dtype() == DType::kF32 || in.dtype() == DType::kF16;
  if (!float_ok || out.dtype() != in.dtype() || work.dtype() != DType::kF32) {
    return invalid_argument(std::string("det: dtypes ") + dtype_name(in.dtype()) + " -> " + dtype_name(out.dtype()) +
                            ", work " + dtype_name(work.dtype()) + " (in and out f32 or f16, work f32)");
  }
  for (const Arg* a : {&in, &out, &work}) {
    if (a->bytes() > max_binding_bytes() || a->numel() > INT32_MAX) {
      return invalid_argument("det: in, out and work must each fit one binding");
    }
  }
  if (out.numel() == 0) return Status::ok();
  if (s.back() == 0) return invalid_argument("det: 0 x 0 matrices");
  DetPush push{static_cast<uint32_t>(out.numel()), static_cast<uint32_t>(s.back())};
  return g.dispatch(in.dtype() == DType::kF32 ? "det_f32" : "det_f16", {},
                    {{in, Access::kRead}, {work, Access::kReadWrite}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(push.batch) + kDetGroup - 1) / kDetGroup));
}

}  // namespace recon::gpu::ops
