#include "gpu/models/retrieval/retrieval_kernels.h"

#include <cstdint>
#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::retrieval {
namespace {

struct TokenNormPush {  // mirrors Push in shaders/retrieval_token_norm.comp
  uint32_t rows, cols;
};
static_assert(sizeof(TokenNormPush) == 8);
struct SelectPush {  // mirrors Push in shaders/retrieval_select.comp
  uint32_t tokens, keep, image0;
};
static_assert(sizeof(SelectPush) == 12);
struct GatherPush {  // mirrors Push in shaders/retrieval_gather.comp
  uint32_t tokens, keep, cols, image0;
};
static_assert(sizeof(GatherPush) == 16);
struct ExcludeSelfPush {  // mirrors Push in shaders/retrieval_exclude_self.comp
  uint32_t images;
};
static_assert(sizeof(ExcludeSelfPush) == 4);

constexpr uint32_t kMaxGroupsPerDim = 65535;

Status check(const char* op, const Arg& a, DType dtype, size_t rank) {
  if (a.dtype() != dtype || a.shape().size() != rank) {
    return invalid_argument(std::string(op) + ": operand " + dtype_name(a.dtype()) + shape_string(a.shape()) +
                            ", expected " + dtype_name(dtype) + " of rank " + std::to_string(rank));
  }
  if (a.bytes() > ops::max_binding_bytes()) {
    return invalid_argument(std::string(op) + ": operand " + shape_string(a.shape()) + " exceeds one storage binding");
  }
  return Status::ok();
}

}  // namespace

Status token_norm(Graph& g, const Arg& x, const Arg& norm) {
  RECON_RETURN_IF_ERROR(check("token_norm", x, DType::kF32, 2));
  RECON_RETURN_IF_ERROR(check("token_norm", norm, DType::kF32, 1));
  if (norm.shape()[0] != x.shape()[0]) return invalid_argument("token_norm: norm does not have x's rows");
  const uint32_t spec[] = {128};
  const TokenNormPush push{static_cast<uint32_t>(x.shape()[0]), static_cast<uint32_t>(x.shape()[1])};
  return g.dispatch("retrieval_token_norm", spec, {{x, Access::kRead}, {norm, Access::kWrite}}, push,
                    Graph::grid_1d(static_cast<uint64_t>(x.shape()[0])));
}

Status select_top(Graph& g, const Arg& attn, const Arg& top_attn, const Arg& top_idx, int64_t image0) {
  RECON_RETURN_IF_ERROR(check("select_top", attn, DType::kF32, 2));
  RECON_RETURN_IF_ERROR(check("select_top", top_attn, DType::kF32, 2));
  RECON_RETURN_IF_ERROR(check("select_top", top_idx, DType::kI32, 2));
  const int64_t images = attn.shape()[0], tokens = attn.shape()[1], keep = top_attn.shape()[1];
  if (top_attn.shape() != top_idx.shape() || image0 < 0 || image0 + images > top_attn.shape()[0] || keep > tokens ||
      keep < 1) {
    return invalid_argument("select_top: outputs " + shape_string(top_attn.shape()) + " do not fit attention " +
                            shape_string(attn.shape()));
  }
  constexpr uint32_t kWg = 256;
  const uint64_t tiles = (static_cast<uint64_t>(tokens) + kWg - 1) / kWg;
  if (tiles > kMaxGroupsPerDim || images > kMaxGroupsPerDim)
    return invalid_argument("select_top: too many tokens or images");
  const uint32_t spec[] = {kWg};
  const SelectPush push{static_cast<uint32_t>(tokens), static_cast<uint32_t>(keep), static_cast<uint32_t>(image0)};
  return g.dispatch("retrieval_select", spec,
                    {{attn, Access::kRead}, {top_attn, Access::kWrite}, {top_idx, Access::kWrite}}, push,
                    {static_cast<uint32_t>(tiles), static_cast<uint32_t>(images), 1});
}

Status gather_tokens(Graph& g, const Arg& feat, const Arg& idx, const Arg& out, int64_t image0) {
  RECON_RETURN_IF_ERROR(check("gather_tokens", feat, DType::kF32, 3));
  RECON_RETURN_IF_ERROR(check("gather_tokens", idx, DType::kI32, 2));
  RECON_RETURN_IF_ERROR(check("gather_tokens", out, DType::kF32, 3));
  const int64_t images = feat.shape()[0], keep = idx.shape()[1], cols = feat.shape()[2];
  if (image0 < 0 || image0 + images > idx.shape()[0] || out.shape() != Shape{idx.shape()[0], keep, cols}) {
    return invalid_argument("gather_tokens: shapes " + shape_string(feat.shape()) + ", " + shape_string(idx.shape()) +
                            " → " + shape_string(out.shape()));
  }
  if (keep > kMaxGroupsPerDim || images > kMaxGroupsPerDim) return invalid_argument("gather_tokens: too many rows");
  const uint32_t spec[] = {128};
  const GatherPush push{static_cast<uint32_t>(feat.shape()[1]), static_cast<uint32_t>(keep),
                        static_cast<uint32_t>(cols), static_cast<uint32_t>(image0)};
  return g.dispatch("retrieval_gather", spec, {{feat, Access::kRead}, {idx, Access::kRead}, {out, Access::kWrite}},
                    push, {static_cast<uint32_t>(keep), static_cast<uint32_t>(images), 1});
}

Status exclude_self(Graph& g, const Arg& sim, const Arg& masked) {
  RECON_RETURN_IF_ERROR(check("exclude_self", sim, DType::kF32, 2));
  RECON_RETURN_IF_ERROR(check("exclude_self", masked, DType::kF32, 2));
  const int64_t images = sim.shape()[0];
  if (sim.shape()[1] != images || masked.shape() != sim.shape()) {
    return invalid_argument("exclude_self: needs square, equal shapes");
  }
  const ExcludeSelfPush push{static_cast<uint32_t>(images)};
  return g.dispatch("retrieval_exclude_self", {}, {{sim, Access::kRead}, {masked, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(images * images) + 255) / 256));
}

}  // namespace recon::gpu::retrieval
