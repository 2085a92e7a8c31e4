#include "gpu/coopmat_layout.h"

#include <bit>

#include "gpu/graph.h"
#include "gpu/runtime.h"
#include "gpu/tensor.h"

namespace recon::gpu {

CoopMatAccLayout analyse_coopmat_acc_layout(const std::vector<float>& values, uint32_t lanes, uint32_t elements) {
  const CoopMatAccLayout irregular;
  if (elements < 2 || elements % 2 != 0 || elements > 32 || lanes * elements != 256 || values.size() < 256) {
    return irregular;
  }
  const auto row = [&](uint32_t lane, uint32_t i) { return static_cast<uint32_t>(values[lane * elements + i]) / 16; };
  std::vector<int> seen(256, 0);
  for (size_t at = 0; at < 256; ++at) {
    const float v = values[at];
    if (!(v >= 0.0f && v < 256.0f) || static_cast<float>(static_cast<uint32_t>(v)) != v) return irregular;
    if (seen[static_cast<uint32_t>(v)]++ != 0) return irregular;
  }
  // The slot pattern, from lane 0; every lane must follow it with two distinct rows.
  uint32_t mask = 0;
  for (uint32_t i = 0; i < elements; ++i) mask |= (row(0, i) != row(0, 0) ? 1u : 0u) << i;
  if (static_cast<uint32_t>(std::popcount(mask)) != elements / 2) return irregular;
  std::vector<uint32_t> first(lanes), second(lanes);
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    first[lane] = row(lane, 0);
    second[lane] = row(lane, std::countr_zero(mask));
    if (first[lane] == second[lane]) return irregular;
    for (uint32_t i = 0; i < elements; ++i) {
      if (row(lane, i) != ((mask >> i) & 1u ? second[lane] : first[lane])) return irregular;
    }
  }
  // A row's 16 elements over elements/2 per lane: 32/elements lanes per row, an aligned cluster.
  const uint32_t row_lanes = 32 / elements;
  if (!std::has_single_bit(row_lanes)) return irregular;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    const uint32_t base = lane & ~(row_lanes - 1);
    if (first[lane] != first[base] || second[lane] != second[base]) return irregular;
  }
  return {elements, mask, row_lanes};
}

Result<CoopMatAccLayout> probe_coopmat_acc_layout(Runtime& rt) {
  const uint32_t sg = rt.caps().subgroup_size;
  RECON_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(rt, DType::kF32, {257}));
  Graph g(rt);
  const uint32_t spec[] = {sg};
  RECON_RETURN_IF_ERROR(g.dispatch("coopmat_layout_probe", spec, {{out, Access::kWrite}}, nullptr, 0, {1, 1, 1}));
  RECON_RETURN_IF_ERROR(g.run());
  std::vector<float> values(257);
  RECON_RETURN_IF_ERROR(out.download(rt, values.data(), values.size() * sizeof(float)));
  const uint32_t elements = static_cast<uint32_t>(values[256]);
  values.resize(256);
  return analyse_coopmat_acc_layout(values, sg, elements);
}

}  // namespace recon::gpu
