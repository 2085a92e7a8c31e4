#include "gpu/ops/pad.h"

#include <cmath>
#include <cstring>
#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of shaders/pad.comp

struct PadPush {
  uint32_t n, rank, value_bits, pad0;
  uint32_t in_shape[kMaxPadRank];
  uint32_t out_shape[kMaxPadRank];
  int32_t begin[kMaxPadRank];
};
static_assert(sizeof(PadPush) == 88, "mirrors Push in shaders/pad.comp");

// The constant as the shader stores it: f32 bits, i32 bits, or the f32 bits the f16 variant
// narrows.
uint32_t value_bits(DType dtype, double value) {
  if (dtype == DType::kI32) return static_cast<uint32_t>(static_cast<int32_t>(value));
  const float f = static_cast<float>(value);
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

}  // namespace

Status pad(Graph& g, const Arg& in, const Arg& out, const std::vector<int64_t>& begin, PadMode mode, double value) {
  const Shape& s = in.shape();
  const Shape& o = out.shape();
  const size_t rank = s.size();
  if (o.size() != rank || begin.size() != rank) {
    return invalid_argument("pad: in " + shape_string(s) + ", out " + shape_string(o) + " and " +
                            std::to_string(begin.size()) + " begin pads must agree in rank");
  }
  if (rank > static_cast<size_t>(kMaxPadRank)) return invalid_argument("pad: rank above 6");
  if (in.dtype() != out.dtype() || in.dtype() == DType::kU8) {
    return invalid_argument(std::string("pad: dtypes ") + dtype_name(in.dtype()) + " -> " + dtype_name(out.dtype()) +
                            " (f32, f16 or i32, equal)");
  }
  if (static_cast<uint32_t>(mode) > 3) return invalid_argument("pad: unknown mode");
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  for (size_t d = 0; d < rank; ++d) {
    if (s[d] > INT32_MAX || o[d] > INT32_MAX || std::abs(begin[d]) > INT32_MAX) {
      return invalid_argument("pad: extents above 2^31");
    }
    // Only kConstant can fill an axis from nothing.
    const bool reads_outside = begin[d] > 0 || o[d] - begin[d] > s[d];
    if (mode != PadMode::kConstant && s[d] == 0 && reads_outside) {
      return invalid_argument("pad: cannot extend the empty axis " + std::to_string(d) + " of " + shape_string(s));
    }
  }
  if (in.bytes() > max_binding_bytes() || out.bytes() > max_binding_bytes()) {
    return invalid_argument("pad: in and out must each fit one binding");
  }
  PadPush push{};
  push.n = static_cast<uint32_t>(n);
  push.rank = static_cast<uint32_t>(rank);
  push.value_bits = value_bits(in.dtype(), value);
  for (size_t d = 0; d < rank; ++d) {
    push.in_shape[d] = static_cast<uint32_t>(s[d]);
    push.out_shape[d] = static_cast<uint32_t>(o[d]);
    push.begin[d] = static_cast<int32_t>(begin[d]);
  }
  // An input with no elements is never read (only kConstant gets here with one): bind out twice.
  const Arg& src = in.numel() == 0 ? out : in;
  const char* shader = dtype_size(in.dtype()) == 4 ? "pad_b32" : "pad_b16";
  const uint32_t spec[] = {static_cast<uint32_t>(mode)};
  return g.dispatch(shader, spec, {{src, Access::kRead}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(n) + kGroup - 1) / kGroup));
}

Status pad_wrap(Graph& g, const Arg& in, const Arg& out) {
  return pad(g, in, out, std::vector<int64_t>(in.shape().size(), 0), PadMode::kWrap);
}

}  // namespace recon::gpu::ops
