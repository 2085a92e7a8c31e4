#include "gpu/ops/softmax.h"

#include <algorithm>
#include <array>
#include <string>

#include "gpu/ops/layout.h"
#include "gpu/ops/wide_access.h"
#include "gpu/runtime.h"

namespace recon::gpu::ops {
namespace {
struct SoftmaxPush {  // mirrors Push in shaders/softmax.comp
  uint32_t rows, cols;
};
static_assert(sizeof(SoftmaxPush) == 8);

// `name` is the op (softmax or log_softmax) and the stem of its shaders' names.
Status row_softmax(Graph& g, const Arg& x, const Arg& out, const std::string& name) {
  if (x.shape().empty() || x.numel() == 0) return invalid_argument(name + ": x is empty or a scalar");
  if (x.shape() != out.shape() || x.dtype() != out.dtype()) {
    return invalid_argument(name + ": out " + dtype_name(out.dtype()) + shape_string(out.shape()) + " differs from x " +
                            dtype_name(x.dtype()) + shape_string(x.shape()));
  }
  if (x.dtype() != DType::kF32 && x.dtype() != DType::kF16) {
    return invalid_argument(name + ": dtype " + dtype_name(x.dtype()) + " not supported (f32, f16)");
  }
  const int64_t cols = x.shape().back();
  const int64_t rows = x.numel() / cols;

  const std::string shader = name + (x.dtype() == DType::kF32 ? "_f32" : "_f16");
  const RowSchedule schedule = softmax_schedule(cols, x.dtype(), fixed_subgroup_size(g.runtime().caps()));
  const uint64_t row_bytes = static_cast<uint64_t>(cols) * dtype_size(x.dtype());
  RECON_ASSIGN_OR_RETURN(int64_t chunk, rows_per_dispatch({row_bytes, row_bytes}, rows));
  RECON_ASSIGN_OR_RETURN(Arg x2, reshape_view(x, {rows, cols}));
  RECON_ASSIGN_OR_RETURN(Arg out2, reshape_view(out, {rows, cols}));
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t r1 = std::min(rows, r0 + chunk);
    RECON_ASSIGN_OR_RETURN(Arg xs, chunk < rows ? row_view(x2, r0, r1) : Result<Arg>(x2));
    RECON_ASSIGN_OR_RETURN(Arg os, chunk < rows ? row_view(out2, r0, r1) : Result<Arg>(out2));
    SoftmaxPush push{static_cast<uint32_t>(r1 - r0), static_cast<uint32_t>(cols)};
    RECON_RETURN_IF_ERROR(g.dispatch(shader, schedule.spec(), {{xs, Access::kRead}, {os, Access::kWrite}}, push,
                                     Graph::grid_1d(schedule.groups(static_cast<uint64_t>(r1 - r0)))));
  }
  return Status::ok();
}

}  // namespace

Status softmax(Graph& g, const Arg& x, const Arg& out) {
  return row_softmax(g, x, out, "softmax");
}

Status log_softmax(Graph& g, const Arg& x, const Arg& out) {
  return row_softmax(g, x, out, "log_softmax");
}

}  // namespace recon::gpu::ops
