#include "gpu/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

struct AttentionPush {  // mirrors Push in shaders/attention.comp, attention_cm.comp and attention_cm_rows.comp
  uint32_t nq, nk;
  uint32_t q_stride, q_col;
  uint32_t k_stride, k_col;
  uint32_t v_stride, v_col;
  uint32_t o_stride;
  float scale_log2e;
};
static_assert(sizeof(AttentionPush) == 40);

constexpr int64_t kMaxHeadDim = 128;
constexpr uint32_t kScalarThreadsPerRow = 4;

struct Dims {
  int64_t batch, nq, nk, width;  // width = H·D
};

Status check_operand(const char* name, const HeadsView& x, int64_t width) {
  const Shape& s = x.tensor.shape();
  if (s.size() != 3 || s[1] < 1) {
    return invalid_argument(std::string("attention: ") + name + " must be [B, N, C] with N >= 1, got " +
                            shape_string(s));
  }
  if (x.col_offset < 0 || x.col_offset + width > s[2]) {
    return invalid_argument(std::string("attention: ") + name + " heads need columns [" + std::to_string(x.col_offset) +
                            ", " + std::to_string(x.col_offset + width) + ") of " + shape_string(s));
  }
  if (x.tensor.numel() > int64_t{0xffffffff}) {
    return invalid_argument(std::string("attention: ") + name + " has more than 2^32 elements");
  }
  return Status::ok();
}

Result<Dims> validate(const HeadsView& q, const HeadsView& k, const HeadsView& v, const Arg& out,
                      const AttentionConfig& cfg) {
  if (cfg.heads < 1 || cfg.heads > 65535) return invalid_argument("attention: heads must be in 1..65535");
  if (cfg.head_dim < 4 || cfg.head_dim % 4 != 0 || cfg.head_dim > kMaxHeadDim) {
    return invalid_argument("attention: head_dim " + std::to_string(cfg.head_dim) +
                            " must be a multiple of 4 in 4..128");
  }
  if (!std::isfinite(cfg.scale) || cfg.scale < 0.0f) return invalid_argument("attention: scale must be finite, >= 0");
  const int64_t width = cfg.heads * cfg.head_dim;
  RECON_RETURN_IF_ERROR(check_operand("q", q, width));
  RECON_RETURN_IF_ERROR(check_operand("k", k, width));
  RECON_RETURN_IF_ERROR(check_operand("v", v, width));
  const DType dt = q.tensor.dtype();
  if (dt != DType::kF32 && dt != DType::kF16) {
    return invalid_argument(std::string("attention: dtype ") + dtype_name(dt) + " not supported (f32, f16)");
  }
  if (k.tensor.dtype() != dt || v.tensor.dtype() != dt || out.dtype() != dt) {
    return invalid_argument("attention: q, k, v and out must share one dtype");
  }
  Dims d{q.tensor.shape()[0], q.tensor.shape()[1], k.tensor.shape()[1], width};
  if (k.tensor.shape()[0] != d.batch || v.tensor.shape()[0] != d.batch) {
    return invalid_argument("attention: batch sizes differ: q " + shape_string(q.tensor.shape()) + ", k " +
                            shape_string(k.tensor.shape()) + ", v " + shape_string(v.tensor.shape()));
  }
  if (v.tensor.shape()[1] != d.nk) {
    return invalid_argument("attention: k has " + std::to_string(d.nk) + " tokens, v " +
                            std::to_string(v.tensor.shape()[1]));
  }
  if (d.batch < 1 || d.batch > 65535) return invalid_argument("attention: batch must be in 1..65535");
  if (out.shape() != Shape{d.batch, d.nq, width}) {
    return invalid_argument("attention: out must be " + shape_string({d.batch, d.nq, width}) + ", got " +
                            shape_string(out.shape()));
  }
  return d;
}

// ---- Tile geometry ----

struct ScalarTile {
  uint32_t br, bc;
};

uint64_t scalar_shared_bytes(uint64_t d, const ScalarTile& t) {
  return 4 * (t.br * (d + 1) + t.bc * (d + 1) + t.bc * d + t.br * (t.bc + 1));  // q_s, k_s, v_s, s_s
}

ScalarTile pick_scalar_tile(const Capabilities& caps, int64_t d) {
  const uint64_t limit = caps.max_compute_shared_memory ? caps.max_compute_shared_memory : 16384;
  for (ScalarTile t : {ScalarTile{32, 32}, ScalarTile{16, 32}, ScalarTile{16, 16}, ScalarTile{8, 16}}) {
    if (scalar_shared_bytes(d, t) <= limit) return t;
  }
  return {8, 8};  // 4·(8·129·2 + 8·128 + 8·9) ≈ 12.7 KiB: fits Vulkan's 16 KiB minimum for D ≤ 128
}

struct CoopTile {
  uint32_t warps, bc, ksplit;  // subgroups, keys per tile, subgroups sharing a row block
  uint32_t ow = 0;             // output columns per pass through the scratch (derived)
};

// The widest multiple of 16 that divides d and fits the scratch a tile of bcw keys needs anyway.
uint32_t output_part_width(uint32_t d, uint32_t bcw) {
  if (d <= bcw) return d;
  for (uint32_t w = bcw - bcw % 16; w >= 16; w -= 16) {
    if (d % w == 0) return w;
  }
  return 16;
}

uint64_t coop_shared_bytes(uint64_t d, const CoopTile& t) {
  const uint64_t bcw = t.bc / t.ksplit;
  const uint64_t kv = 2 * t.bc * (d + 8) * 2;                                  // k_s, v_s (fp16, 8 elements of skew)
  const uint64_t ps = t.warps * 16 * (bcw + 8) * 2;                            // p_s
  const uint64_t sc = t.warps * 16 * (std::max<uint64_t>(bcw, t.ow) + 4) * 4;  // fp32 scratch
  const uint64_t stats = t.warps * 16 * 8;                                     // row_stats
  return kv + ps + sc + stats;
}

// The coopmat tile for this device and head dim, if the path applies at all. Preference order:
// two subgroups per row block (more subgroups in flight: latency hiding), then bigger tiles.
bool pick_coop_tile(const Capabilities& caps, int64_t d, CoopTile* out) {
  if (!caps.nv_coopmat_f16_16x16x16() || !caps.storage_16bit || !caps.shader_float16) {
    return false;
  }
  const uint32_t sg = caps.subgroup_size;
  if (sg != 16 && sg != 32 && sg != 64) return false;
  if (d % 16 != 0 || d > kMaxHeadDim) return false;
  const uint32_t lpr = sg / 16;
  if ((d / 8) % lpr != 0) return false;
  // Measured on an H100 at MASt3R's encoder shape (2 × 16 heads, N = 768, D = 64): {8, 64, 2} 66,
  // {4, 64, 1} 62, {2, 32, 1} 53 TFLOP/s; {4, 64, 2} (47) and {2, 64, 2} (28) were slower. On an
  // H200 (AttentionBench.CoopMatTileSweep) {8, 64, 2} is also the best at the decoder's shapes:
  // one view of 12 heads 50 µs, two views side by side 74 µs ({2, 32, 1}: 57 and 87 µs).
  const CoopTile candidates[] = {{8, 64, 2}, {4, 64, 1}, {2, 64, 1}, {2, 32, 1}, {1, 32, 1}, {1, 16, 1}};
  for (CoopTile t : candidates) {
    const uint32_t bcw = t.bc / t.ksplit;
    if (bcw % 16 != 0 || (bcw / 8) % lpr != 0 || t.warps % t.ksplit != 0) continue;
    t.ow = output_part_width(static_cast<uint32_t>(d), bcw);
    if ((t.ow / 8) % lpr != 0) continue;
    if (16 * (t.warps / t.ksplit) > t.bc) continue;  // the q tile is staged in the K tile's memory
    if (t.warps * sg > caps.max_workgroup_invocations) continue;
    if (coop_shared_bytes(d, t) <= caps.max_compute_shared_memory) {
      *out = t;
      return true;
    }
  }
  return false;
}

// The register-softmax kernel (shaders/attention_cm_rows.comp): warps subgroups of rpw 16-row
// blocks each, bc keys per tile. It needs the probed two-rows-per-lane accumulator layout, at most
// 8 elements per lane (their columns are packed in 4 bits each into one register) and the tensor
// cores of the shared-memory kernel.
struct RowsTile {
  uint32_t warps, bc, rpw;
};

uint64_t rows_shared_bytes(uint64_t d, const RowsTile& t) {
  return 2 * t.bc * (d + 8) * 2 + 256 * 4;  // kv_s (fp16, 8 elements of skew), index_s
}

bool pick_rows_tile(const Capabilities& caps, int64_t d, RowsTile* out) {
  const CoopMatAccLayout& layout = caps.coopmat_acc_layout;
  CoopTile shared_tile;
  if (!layout.two_rows_per_lane() || layout.elements > 8 || !pick_coop_tile(caps, d, &shared_tile)) return false;
  const uint32_t sg = caps.subgroup_size;
  // Measured on an H200 (AttentionBench.CoopMatTileSweep, 2026-11-22): {4, 32, 1} (127 registers)
  // 124 TFLOP/s at the encoder's shape and 38 µs for the decoder's batch of 2 × 12 heads; {4, 64, 2}
  // 108 and 43 µs (255 registers, spills); {4, 64, 1} 96 and 50 µs; BC = 128 slower still.
  const RowsTile candidates[] = {{4, 32, 1}, {2, 32, 1}, {1, 32, 1}, {1, 16, 1}};
  for (const RowsTile& t : candidates) {
    if (16 * t.rpw * t.warps > 2 * t.bc || t.warps * sg > caps.max_workgroup_invocations) continue;
    if (rows_shared_bytes(d, t) <= caps.max_compute_shared_memory) {
      *out = t;
      return true;
    }
  }
  return false;
}

// Grids of many waves take two row blocks per subgroup and 64 keys per tile: each K and V fragment
// read from shared memory then feeds two products, worth the register spills once every SM has
// several workgroups queued. Measured on an H200 (AttentionBench.CoopMatTileSweep, 2026-11-22):
// MASt3R's encoder at batch 8 (16 images × 16 heads, 1536 such workgroups) 168 TFLOP/s against 153
// for {4, 32, 1}; at batch 1 (192) 108 against 126, and the decoder at batch 8 (576 per view) 152
// against 151.
RowsTile rows_tile_for_grid(const Capabilities& caps, int64_t d, const RowsTile& base, int64_t batch, int64_t heads,
                            int64_t nq) {
  const RowsTile wide{4, 64, 2};
  const int64_t groups = (nq + 16 * wide.rpw * wide.warps - 1) / (16 * wide.rpw * wide.warps) * heads * batch;
  const bool many_waves = caps.shader_core_count > 0 && groups >= 8 * int64_t{caps.shader_core_count};
  const bool fits = wide.warps * caps.subgroup_size <= caps.max_workgroup_invocations &&
                    rows_shared_bytes(d, wide) <= caps.max_compute_shared_memory;
  return many_waves && fits ? wide : base;
}

bool coop_layout_ok(const HeadsView& q, const HeadsView& k, const HeadsView& v, int64_t width) {
  for (const HeadsView* x : {&q, &k, &v}) {
    if (x->tensor.shape()[2] % 8 != 0 || x->col_offset % 8 != 0) return false;
  }
  return width % 8 == 0;
}

}  // namespace

const char* attention_path_name(AttentionPath path) {
  switch (path) {
    case AttentionPath::kAuto:
      return "auto";
    case AttentionPath::kScalar:
      return "scalar";
    case AttentionPath::kCoopMat:
      return "coopmat";
    case AttentionPath::kCoopMatRows:
      return "coopmat_rows";
  }
  return "?";
}

AttentionPath choose_attention_path(const Capabilities& caps, const HeadsView& q, const HeadsView& k,
                                    const HeadsView& v, const AttentionConfig& cfg) {
  if (q.tensor.dtype() != DType::kF16 || q.tensor.shape().size() != 3 || k.tensor.shape().size() != 3 ||
      v.tensor.shape().size() != 3 || !coop_layout_ok(q, k, v, cfg.heads * cfg.head_dim)) {
    return AttentionPath::kScalar;
  }
  RowsTile rows;
  if (pick_rows_tile(caps, cfg.head_dim, &rows)) return AttentionPath::kCoopMatRows;
  CoopTile tile;
  if (pick_coop_tile(caps, cfg.head_dim, &tile)) return AttentionPath::kCoopMat;
  return AttentionPath::kScalar;
}

bool attention_path_applies(const Capabilities& caps, const HeadsView& q, const HeadsView& k, const HeadsView& v,
                            const AttentionConfig& cfg, AttentionPath path) {
  const AttentionPath best = choose_attention_path(caps, q, k, v, cfg);
  switch (path) {
    case AttentionPath::kAuto:
    case AttentionPath::kScalar:
      return true;
    case AttentionPath::kCoopMatRows:
      return best == AttentionPath::kCoopMatRows;
    case AttentionPath::kCoopMat:  // where the register-softmax kernel applies, this one does too
      return best != AttentionPath::kScalar;
  }
  return false;
}

Status attention(Graph& g, const Capabilities& caps, const HeadsView& q, const HeadsView& k, const HeadsView& v,
                 const Arg& out, const AttentionConfig& cfg) {
  RECON_ASSIGN_OR_RETURN(Dims dims, validate(q, k, v, out, cfg));
  const AttentionPath path = cfg.path == AttentionPath::kAuto ? choose_attention_path(caps, q, k, v, cfg) : cfg.path;
  if (!attention_path_applies(caps, q, k, v, cfg, path)) {
    return unimplemented(std::string("attention: the ") + attention_path_name(path) +
                         " path does not apply (needs VK_NV_cooperative_matrix with 16x16x16 f16->f32, fp16 "
                         "tensors, head_dim % 16 == 0, 8-aligned strides; coopmat_rows also the probed "
                         "two-rows-per-lane accumulator layout)");
  }

  const int64_t d = cfg.head_dim;
  const float scale = cfg.scale > 0.0f ? cfg.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  std::string shader;
  std::vector<uint32_t> spec;
  uint32_t rows_per_group = 0;
  if (path == AttentionPath::kCoopMatRows) {
    RowsTile t{};
    pick_rows_tile(caps, d, &t);
    t = rows_tile_for_grid(caps, d, t, dims.batch, cfg.heads, dims.nq);
    const CoopMatAccLayout& layout = caps.coopmat_acc_layout;
    shader = "attention_cm_rows_f16";
    spec = {static_cast<uint32_t>(d), t.warps,         t.bc, t.warps * caps.subgroup_size, t.rpw,
            layout.slot_mask,         layout.row_lanes};
    rows_per_group = 16 * t.rpw * t.warps;
  } else if (path == AttentionPath::kCoopMat) {
    CoopTile t{};
    pick_coop_tile(caps, d, &t);
    const uint32_t sg = caps.subgroup_size;
    shader = "attention_cm_f16";
    spec = {static_cast<uint32_t>(d), t.warps, t.bc, sg, t.warps * sg, t.ksplit, t.ow};
    rows_per_group = 16 * t.warps / t.ksplit;
  } else {
    const ScalarTile t = pick_scalar_tile(caps, d);
    shader = q.tensor.dtype() == DType::kF32 ? "attention_f32" : "attention_f16";
    spec = {static_cast<uint32_t>(d), t.br, t.bc, kScalarThreadsPerRow, t.br * kScalarThreadsPerRow};
    rows_per_group = t.br;
  }
  const int64_t q_groups = (dims.nq + rows_per_group - 1) / rows_per_group;
  if (q_groups > 65535) return invalid_argument("attention: too many query tokens for one dispatch");

  // Split the batch when an operand exceeds one binding (q, k, v may be one tensor: same views).
  const size_t es = dtype_size(q.tensor.dtype());
  const auto item_bytes = [&](const Arg& a) { return static_cast<uint64_t>(a.shape()[1] * a.shape()[2]) * es; };
  RECON_ASSIGN_OR_RETURN(int64_t chunk, rows_per_dispatch({item_bytes(q.tensor), item_bytes(k.tensor),
                                                           item_bytes(v.tensor), item_bytes(out)},
                                                          dims.batch));
  AttentionPush push{static_cast<uint32_t>(dims.nq),
                     static_cast<uint32_t>(dims.nk),
                     static_cast<uint32_t>(q.tensor.shape()[2]),
                     static_cast<uint32_t>(q.col_offset),
                     static_cast<uint32_t>(k.tensor.shape()[2]),
                     static_cast<uint32_t>(k.col_offset),
                     static_cast<uint32_t>(v.tensor.shape()[2]),
                     static_cast<uint32_t>(v.col_offset),
                     static_cast<uint32_t>(dims.width),
                     static_cast<float>(scale * 1.4426950408889634)};
  for (int64_t b0 = 0; b0 < dims.batch; b0 += chunk) {
    const int64_t b1 = std::min(dims.batch, b0 + chunk);
    const bool split = chunk < dims.batch;
    RECON_ASSIGN_OR_RETURN(Arg qs, split ? row_view(q.tensor, b0, b1) : Result<Arg>(q.tensor));
    RECON_ASSIGN_OR_RETURN(Arg ks, split ? row_view(k.tensor, b0, b1) : Result<Arg>(k.tensor));
    RECON_ASSIGN_OR_RETURN(Arg vs, split ? row_view(v.tensor, b0, b1) : Result<Arg>(v.tensor));
    RECON_ASSIGN_OR_RETURN(Arg os, split ? row_view(out, b0, b1) : Result<Arg>(out));
    RECON_RETURN_IF_ERROR(g.dispatch(
        shader, spec, {{qs, Access::kRead}, {ks, Access::kRead}, {vs, Access::kRead}, {os, Access::kWrite}}, push,
        {static_cast<uint32_t>(q_groups), static_cast<uint32_t>(cfg.heads), static_cast<uint32_t>(b1 - b0)}));
  }
  return Status::ok();
}

Status self_attention_rope(Graph& g, const Capabilities& caps, const Arg& qkv, const Arg& out, const RopeGrid& grid,
                           const AttentionConfig& cfg) {
  const int64_t width = cfg.heads * cfg.head_dim;
  if (qkv.shape().size() != 3 || qkv.shape()[2] != 3 * width) {
    return invalid_argument("self_attention_rope: qkv must be [B, N, 3·H·D] = [B, N, " + std::to_string(3 * width) +
                            "], got " + shape_string(qkv.shape()));
  }
  // Validate everything before recording the in-place rotation, so a refused call changes nothing.
  const HeadsView q{qkv, 0}, k{qkv, width}, v{qkv, 2 * width};
  RECON_RETURN_IF_ERROR(validate(q, k, v, out, cfg).status());
  if (!attention_path_applies(caps, q, k, v, cfg, cfg.path)) {
    return attention(g, caps, q, k, v, out, cfg);  // reports UNIMPLEMENTED without recording anything
  }
  RECON_RETURN_IF_ERROR(rope2d(g, qkv, 0, 2 * cfg.heads, cfg.head_dim, grid));  // q and k are adjacent
  return attention(g, caps, q, k, v, out, cfg);
}

Status cross_attention_rope(Graph& g, const Capabilities& caps, const Arg& q, const Arg& k, const Arg& v,
                            const Arg& out, const RopeGrid& q_grid, const RopeGrid& k_grid,
                            const AttentionConfig& cfg) {
  const HeadsView qv{q, 0}, kv{k, 0}, vv{v, 0};
  RECON_RETURN_IF_ERROR(validate(qv, kv, vv, out, cfg).status());
  if (q.shape()[1] != q_grid.h * q_grid.w || k.shape()[1] != k_grid.h * k_grid.w) {
    return invalid_argument("cross_attention_rope: grids " + std::to_string(q_grid.h) + "x" + std::to_string(q_grid.w) +
                            " / " + std::to_string(k_grid.h) + "x" + std::to_string(k_grid.w) +
                            " do not match the token counts of q " + shape_string(q.shape()) + " and k " +
                            shape_string(k.shape()));
  }
  if (!attention_path_applies(caps, qv, kv, vv, cfg, cfg.path)) return attention(g, caps, qv, kv, vv, out, cfg);
  RECON_RETURN_IF_ERROR(rope2d(g, q, 0, cfg.heads, cfg.head_dim, q_grid));
  RECON_RETURN_IF_ERROR(rope2d(g, k, 0, cfg.heads, cfg.head_dim, k_grid));
  return attention(g, caps, qv, kv, vv, out, cfg);
}

}  // namespace recon::gpu::ops
