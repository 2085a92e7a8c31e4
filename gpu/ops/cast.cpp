#include "gpu/ops/cast.h"

#include <algorithm>
#include <string>

#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/wide_access.h"

namespace recon::gpu::ops {
namespace {
struct CastPush {
  uint32_t n;
};
static_assert(sizeof(CastPush) == 4, "mirrors Push in shaders/cast.comp and cast_words.comp");

// The TRUTH specialisation constant of shaders/cast.comp: kInf plus 1 for +inf, plus 2 for −inf;
// kWrap plus 1 for a signed type, plus 2 for 16 bits (8 without).
enum class Truth : uint32_t { kValue = 0, kNonZero = 1, kZero = 2, kNaN = 3, kInf = 4, kWrap = 8 };

const char* cast_dtype_suffix(DType d) {
  switch (d) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kI32:
      return "i32";
    case DType::kU8:
      break;
  }
  return nullptr;
}

Status cast_dispatches(Graph& g, const Arg& in, const Arg& out, Truth truth) {
  const auto t = static_cast<uint32_t>(truth);
  const bool wrap = t >= static_cast<uint32_t>(Truth::kWrap);
  const std::string what = truth == Truth::kValue                    ? "cast"
                           : wrap                                    ? "wrap_int"
                           : truth == Truth::kNaN                    ? "is_nan"
                           : t >= static_cast<uint32_t>(Truth::kInf) ? "is_inf"
                                                                     : "cast_to_bool";
  const bool float_class = !wrap && t >= static_cast<uint32_t>(Truth::kNaN);
  if (in.shape() != out.shape()) {
    return invalid_argument(what + ": shapes differ: " + shape_string(in.shape()) + " -> " + shape_string(out.shape()));
  }
  const char* from = cast_dtype_suffix(in.dtype());
  const char* to = cast_dtype_suffix(out.dtype());
  if (from == nullptr || to == nullptr || (truth != Truth::kValue && out.dtype() != DType::kI32) ||
      (float_class && in.dtype() == DType::kI32)) {
    return invalid_argument(what + ": " + dtype_name(in.dtype()) + " -> " + dtype_name(out.dtype()) +
                            (truth == Truth::kValue ? " (f32, f16 or i32 each way)"
                             : float_class          ? " (f32 or f16 into i32)"
                             : wrap                 ? " (f32, f16 or i32 into i32)"
                                                    : " (f32, f16 or i32 into i32)"));
  }
  const std::string shader = std::string("cast_") + from + "_" + to;
  // f32 <-> f16 of whole groups of four go four at a time (a 16-byte fp32 word, an 8-byte fp16 pair).
  const bool floats = in.dtype() != DType::kI32 && out.dtype() != DType::kI32;
  const std::string words_shader = std::string("cast_words_") + from + "_" + to;
  // Operands beyond one binding (the 175 MiB fp32 head weight on lavapipe) go in flat chunks whose
  // starts stay aligned in both dtypes, so each chunk binds as a plain row view.
  const int64_t n = in.numel();
  RECON_ASSIGN_OR_RETURN(Arg flat_in, reshape_view(in, {n}));
  RECON_ASSIGN_OR_RETURN(Arg flat_out, reshape_view(out, {n}));
  RECON_ASSIGN_OR_RETURN(int64_t chunk, rows_per_dispatch({dtype_size(in.dtype()), dtype_size(out.dtype())}, n));
  const uint32_t spec[] = {t};
  for (int64_t e0 = 0; e0 < std::max<int64_t>(n, 1); e0 += chunk) {
    const int64_t e1 = std::min(n, e0 + chunk);
    RECON_ASSIGN_OR_RETURN(Arg src, chunk < n ? row_view(flat_in, e0, e1) : Result<Arg>(flat_in));
    RECON_ASSIGN_OR_RETURN(Arg dst, chunk < n ? row_view(flat_out, e0, e1) : Result<Arg>(flat_out));
    CastPush push{static_cast<uint32_t>(e1 - e0)};
    if (floats && push.n % 4 == 0) {
      const CastPush quads{push.n / 4};
      RECON_RETURN_IF_ERROR(g.dispatch(words_shader, {}, {{src, Access::kRead}, {dst, Access::kWrite}}, quads,
                                       {grid_stride_groups(quads.n), 1, 1}));
      continue;
    }
    RECON_RETURN_IF_ERROR(g.dispatch(shader, spec, {{src, Access::kRead}, {dst, Access::kWrite}}, push,
                                     Graph::grid_1d((push.n + 255) / 256)));
  }
  return Status::ok();
}

}  // namespace

Status cast(Graph& g, const Arg& in, const Arg& out) {
  if (in.dtype() == out.dtype() && in.shape() == out.shape()) return copy(g, in, out);
  return cast_dispatches(g, in, out, Truth::kValue);
}

Status wrap_int(Graph& g, const Arg& in, const Arg& out, int bits, bool is_signed) {
  if (bits != 8 && bits != 16) return invalid_argument("wrap_int: " + std::to_string(bits) + " bits (8 or 16)");
  const uint32_t mode = (is_signed ? 1u : 0u) | (bits == 16 ? 2u : 0u);
  return cast_dispatches(g, in, out, static_cast<Truth>(static_cast<uint32_t>(Truth::kWrap) + mode));
}

Status cast_to_bool(Graph& g, const Arg& in, const Arg& out, bool invert) {
  return cast_dispatches(g, in, out, invert ? Truth::kZero : Truth::kNonZero);
}

Status is_nan(Graph& g, const Arg& in, const Arg& out) {
  return cast_dispatches(g, in, out, Truth::kNaN);
}

Status is_inf(Graph& g, const Arg& in, const Arg& out, bool positive, bool negative) {
  const uint32_t signs = (positive ? 1u : 0u) | (negative ? 2u : 0u);
  return cast_dispatches(g, in, out, static_cast<Truth>(static_cast<uint32_t>(Truth::kInf) + signs));
}

}  // namespace recon::gpu::ops
