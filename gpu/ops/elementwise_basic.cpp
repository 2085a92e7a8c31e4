#include "gpu/ops/elementwise_basic.h"

#include <string>

#include "gpu/ops/wide_access.h"

namespace recon::gpu::ops {
namespace {

struct CountPush {
  uint32_t n;
};
static_assert(sizeof(CountPush) == 4);

struct FillPush {
  uint32_t n;
  float value;
};
static_assert(sizeof(FillPush) == 8);

Result<const char*> float_variant(DType dtype, const char* f32, const char* f16) {
  if (dtype == DType::kF32) return f32;
  if (dtype == DType::kF16) return f16;
  return invalid_argument(std::string("dtype ") + dtype_name(dtype) + " not supported (f32, f16)");
}

Status check_count(const Arg& a) {
  if (a.numel() > int64_t{0xffffffff}) return invalid_argument("tensor too large for a 32-bit element count");
  return Status::ok();
}

}  // namespace

Status fill(Graph& g, const Arg& out, float value) {
  RECON_ASSIGN_OR_RETURN(const char* shader, float_variant(out.dtype(), "fill_f32", "fill_f16"));
  RECON_RETURN_IF_ERROR(check_count(out));
  FillPush push{static_cast<uint32_t>(out.numel()), value};
  return g.dispatch(shader, {}, {{out, Access::kWrite}}, push, Graph::grid_1d((push.n + 255) / 256));
}

Status copy(Graph& g, const Arg& src, const Arg& dst) {
  if (src.bytes() != dst.bytes()) {
    return invalid_argument("copy: " + std::to_string(src.bytes()) + " bytes into " + std::to_string(dst.bytes()));
  }
  if (src.bytes() % 4 != 0) return invalid_argument("copy: size must be a multiple of 4 bytes");
  if (src.bytes() % 16 == 0) {  // 16-byte words, a fixed grid looping over them (wide_access.h)
    CountPush push{static_cast<uint32_t>(src.bytes() / 16)};
    const uint32_t unroll[] = {1};
    return g.dispatch("copy_grid", unroll, {{src, Access::kRead}, {dst, Access::kWrite}}, push,
                      {grid_stride_groups(push.n), 1, 1});
  }
  CountPush push{static_cast<uint32_t>(src.bytes() / 4)};
  return g.dispatch("copy_u32", {}, {{src, Access::kRead}, {dst, Access::kWrite}}, push,
                    Graph::grid_1d((push.n + 255) / 256));
}

Status add(Graph& g, const Arg& a, const Arg& b, const Arg& out) {
  if (a.shape() != b.shape() || a.shape() != out.shape() || a.dtype() != b.dtype() || a.dtype() != out.dtype()) {
    return invalid_argument("add: operands differ: " + shape_string(a.shape()) + ", " + shape_string(b.shape()) +
                            " -> " + shape_string(out.shape()));
  }
  RECON_ASSIGN_OR_RETURN(const char* shader, float_variant(a.dtype(), "add_f32", "add_f16"));
  RECON_RETURN_IF_ERROR(check_count(a));
  CountPush push{static_cast<uint32_t>(a.numel())};
  return g.dispatch(shader, {}, {{a, Access::kRead}, {b, Access::kRead}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((push.n + 255) / 256));
}

}  // namespace recon::gpu::ops
