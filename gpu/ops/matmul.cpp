#include "gpu/ops/matmul.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gpu/runtime.h"

namespace recon::gpu::ops {
namespace {

struct MatmulPush {
  uint32_t m, n, k;
  uint32_t lda, ldb, ldc;
  uint32_t stride_a, stride_b, stride_c;
  uint32_t off_a, off_b, off_c, off_r, off_bias;
  float alpha, beta;
  uint32_t flags;
  // The tensor-core RoPE epilogue (matmul_coopmat.comp only): columns below rope_cols rotate; a
  // row's token is row % rope_tokens on a grid rope_grid_w wide.
  uint32_t rope_cols, rope_tokens, rope_grid_w;
  float rope_base;
};
static_assert(sizeof(MatmulPush) == 84,
              "mirrors Push in shaders/matmul_coopmat.comp (matmul.comp: the first 68 bytes)");

constexpr int64_t kU32Max = 0xffffffffLL;
// Scalar matmul takes its transposes as flags (shaders/gemm_epilogue.glsl), the coopmat variant as
// specialisation constants 8 and 9 (they shape its shared-memory layout).
constexpr uint32_t kFlagTransA = 0x200, kFlagTransB = 0x400;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Halves a chunk extent, keeping it a multiple of the tile edge while it spans several tiles.
int64_t shrink(int64_t extent, int64_t tile) {
  int64_t half = ceil_div(extent, 2);
  return half > tile ? ceil_div(half, tile) * tile : half;
}

// One operand seen as a flat array: element (b, m, n) of a chunk lies at
// offset + b·sb + m·sm + n·sn (+ the fixed K extent for A and B).
struct Operand {
  const Arg* arg = nullptr;
  const char* name = "";
  int64_t offset = 0, sb = 0, sm = 0, sn = 0;
  int64_t fixed = 0;  // (K−1)·(stride along K) for A and B
  bool uses_m = false, uses_n = false;

  // Elements spanned by a chunk of bc × mc × nc (all ≥ 1).
  int64_t footprint(int64_t bc, int64_t mc, int64_t nc) const {
    return (bc - 1) * sb + (uses_m ? (mc - 1) * sm : 0) + (uses_n ? (nc - 1) * sn : 0) + fixed + 1;
  }
  int64_t start(int64_t b0, int64_t m0, int64_t n0) const {
    return offset + b0 * sb + (uses_m ? m0 * sm : 0) + (uses_n ? n0 * sn : 0);
  }
};

bool float_dtype(DType d) {
  return d == DType::kF32 || d == DType::kF16;
}

std::string dims(int64_t m, int64_t n, int64_t k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

}  // namespace

Result<GemmWindow> gemm_window(const Capabilities& caps, const Arg& arg, int64_t start, int64_t count) {
  if (arg.bytes() <= caps.max_storage_buffer_range) return GemmWindow{arg, start};
  if (arg.is_slot()) {
    return invalid_argument("operand of " + std::to_string(arg.bytes()) +
                            " bytes exceeds maxStorageBufferRange; pass a tensor so that it can be split");
  }
  const Tensor& t = arg.tensor();
  const int64_t esz = static_cast<int64_t>(dtype_size(t.dtype()));
  const int64_t align = static_cast<int64_t>(std::max<VkDeviceSize>(caps.min_storage_buffer_offset_alignment, 4));
  const int64_t misalign = static_cast<int64_t>((t.offset() + static_cast<VkDeviceSize>(start * esz)) % align);
  const int64_t lo = start - misalign / esz;
  if (misalign % esz != 0 || lo < 0) return invalid_argument("operand is not aligned to its element size");
  if (static_cast<VkDeviceSize>((start + count - lo) * esz) > caps.max_storage_buffer_range) {
    return invalid_argument("a window of " + std::to_string(count) + " elements exceeds maxStorageBufferRange");
  }
  RECON_ASSIGN_OR_RETURN(Tensor flat, t.reshape({t.numel()}));
  RECON_ASSIGN_OR_RETURN(Tensor view, flat.slice_rows(lo, start + count));
  return GemmWindow{Arg(view), start - lo};
}

bool operands_overlap(const Arg& x, const Arg& y) {
  if (x.is_slot() || y.is_slot() || x.tensor().buffer() != y.tensor().buffer()) return false;
  const VkDeviceSize x0 = x.tensor().offset(), y0 = y.tensor().offset();
  return x0 < y0 + y.bytes() && y0 < x0 + x.bytes();
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kGeluErf:
      return "gelu_erf";
    case Activation::kGeluTanh:
      return "gelu_tanh";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kTanh:
      return "tanh";
  }
  return "?";
}

bool coopmat_gemm_available(const Capabilities& caps) {
  if (!caps.nv_cooperative_matrix || !caps.storage_16bit || !caps.shader_float16) return false;
  if (caps.subgroup_size == 0 || 8 * caps.subgroup_size > caps.max_workgroup_invocations) return false;
  if (caps.max_compute_shared_memory < 40960) return false;
  return caps.nv_coopmat_f16_16x16x16();
}

std::array<uint32_t, 3> GemmTiling::groups(int64_t m, int64_t n, int64_t batch) const {
  return {static_cast<uint32_t>(std::max<int64_t>(ceil_div(m, bm), 1)),
          static_cast<uint32_t>(std::max<int64_t>(ceil_div(n, bn), 1)),
          static_cast<uint32_t>(std::max<int64_t>(batch, 1) * splits)};
}

// A split-K share keeps at least this many K slices: shorter ones spend more on storing and summing
// partial tiles than they save.
constexpr int64_t kMinSlicesPerShare = 8;

int64_t wave_balanced_splits(int64_t tiles, int64_t slices, int64_t resident) {
  // Cost in K slices of one workgroup: waves × (slices per share + what a share adds). Measured on
  // an H200 at 128×128 (MatmulBenchTest.WaveBalancedSplitK): a wave of shares costs ~13 µs more
  // than its slices (~0.9 µs each) — the partial tile's store, the last arrival's sums, the
  // pipeline's fill — so ViT-L's fc2 at batch 1 (96 tiles, 128 slices) is faster unsplit (117 µs)
  // than in quarters (125 µs), and the local-feature fc2 (300 tiles, 224 slices) in thirds (560 µs
  // against 601).
  constexpr int64_t kShareCostSlices = 14, kMaxSplits = 8;
  if (tiles <= 0 || resident <= 0) return 1;
  int64_t best = 1, best_cost = ceil_div(tiles, resident) * slices;
  for (int64_t s = 2; s <= kMaxSplits && slices / s >= kMinSlicesPerShare; ++s) {
    const int64_t cost = ceil_div(tiles * s, resident) * (ceil_div(slices, s) + kShareCostSlices);
    if (cost < best_cost) best = s, best_cost = cost;
  }
  return best;
}

Result<GemmSplitK> GemmSplitK::plan(Graph& g, const Capabilities& caps, GemmTiling& tiling, int64_t m, int64_t n,
                                    int64_t k, int64_t batch) {
  // Small grids: at most a quarter of ~256 workgroups. An H200 (132 SMs) holds two 128×128 BK = 16
  // tiles or one BK = 32 tile per SM (tests/gpu/ops/matmul_test.cpp, CoopMatTileSweep). Larger grids of 128×128 tiles
  // with two register sets of loads (one workgroup per SM) split where the device reports its SM count and a split
  // fills the last wave better (wave_balanced_splits): the local-feature fc2 (300 tiles of 224 slices) is the case.
  // So do grids of BK = 16 tiles (fp16) that leave some of the two places per SM empty: ResNet-50's 3×3
  // convolution at 14×14 at batch 32 is 128 tiles of 144 slices, one wave.
  // The scalar tiles split small grids only on a device that reports its SM count, a GPU, where
  // ResNet-50's batch 1 in fp32 ran 3×3 convolutions of 8 workgroups (529 µs at 7×7 on an H200);
  // a CPU driver (lavapipe) has no idle cores for the shares to fill.
  constexpr int64_t kTargetGroups = 256, kMaxSplits = 32;
  GemmSplitK out;
  tiling.splits = 1;
  const int64_t tiles = ceil_div(m, tiling.bm) * ceil_div(n, tiling.bn) * std::max<int64_t>(batch, 1);
  const int64_t slices = ceil_div(k, tiling.bk);
  if (!tiling.coopmat && caps.shader_core_count == 0) return out;
  int64_t splits = 1;
  const bool wave_tiles = tiling.coopmat && tiling.bm == 128 && tiling.bn == 128 && tiling.bk == 32 &&
                          tiling.prefetch >= 2 && caps.shader_core_count > 0;
  if (tiles * 4 <= kTargetGroups && !wave_tiles) {
    splits = std::min({ceil_div(kTargetGroups, tiles), slices / kMinSlicesPerShare, kMaxSplits});
  } else if (wave_tiles) {
    splits = wave_balanced_splits(tiles, slices, caps.shader_core_count);
  } else if (tiling.coopmat && tiling.bm == 128 && tiling.bn == 128 && tiling.bk == 16 && !tiling.split &&
             caps.shader_core_count > 0 && tiles < 2 * int64_t{caps.shader_core_count}) {
    splits = wave_balanced_splits(tiles, slices, 2 * int64_t{caps.shader_core_count});
  }
  splits = std::min<int64_t>(splits, int64_t{caps.max_workgroup_count[2]} / std::max<int64_t>(batch, 1));
  if (splits < 2) return out;
  tiling.splits = static_cast<uint32_t>(splits);
  // One workspace per graph for all its split GEMMs, which it orders: with one per GEMM,
  // ResNet-50's activations and workspaces took 80.5 MiB at batch 1 in fp16 on an H200, 11.5 with
  // one per graph, at the same speed. One uint32 counter per tile (in an
  // fp32 tensor: zeroed bits are 0u), zero before and after each GEMM: the last share of a tile
  // resets it (gemm_split_k.glsl).
  out.partials_ = g.scratch("gemm split-K partials", DType::kF32, tiles * splits * int64_t{tiling.bm} * tiling.bn);
  out.arrivals_ = g.scratch("gemm split-K arrivals", DType::kF32, tiles);
  return out;
}

Binding GemmSplitK::partials(const Arg& dummy) const {
  return partials_ ? Binding{*partials_, Access::kReadWrite} : Binding{dummy, Access::kRead};
}

Binding GemmSplitK::arrivals(const Arg& dummy) const {
  return arrivals_ ? Binding{*arrivals_, Access::kReadWrite} : Binding{dummy, Access::kRead};
}

Result<GemmTiling> choose_gemm_tiling(const Capabilities& caps, DType dtype, int64_t m, int64_t n, int64_t k,
                                      GemmPath path, bool b_row_major, int64_t batch) {
  if (!float_dtype(dtype)) {
    return invalid_argument(std::string("GEMM: dtype ") + dtype_name(dtype) + " not supported (f32, f16)");
  }
  const bool coop_ok = coopmat_gemm_available(caps);
  if (path == GemmPath::kCoopMat && !coop_ok) {
    return unimplemented("GEMM: the tensor-core path needs VK_NV_cooperative_matrix (16x16x16 f16->f32)");
  }
  GemmTiling t;
  if (splits_f32(path) && coop_ok && dtype == DType::kF32) {
    // fp32 storage as hi and lo fp16 parts (shaders/gemm_io.glsl): three MMAs per fragment pair,
    // the parts staged side by side and two sets of accumulators (three when each slice is
    // rounded). That doubles the shared memory and more than doubles the accumulator registers of
    // the fp16 tiles, so BK = 16 with one slice of loads in flight; 128×128 tiles only with B
    // row-major, whose slice is the smaller one (41 KiB of the 48 KiB; B column-major would need
    // 48 KiB and one word more). Measured on an H200 (MASt3R fp32, batch 1): 92 ms rounded, 91
    // without, against 133 on the scalar path.
    t.coopmat = true;
    t.split = true;
    t.round_slices = path != GemmPath::kAutoSplitF32Coarse;
    t.bk = 16;
    t.prefetch = 1;
    const int64_t tiles = ceil_div(m, 128) * ceil_div(n, 128) * std::max<int64_t>(batch, 1);
    if (tiles >= 64 && b_row_major) {
      t.bm = 128, t.bn = 128, t.t0 = 2, t.t1 = 4;
    } else {
      t.bm = 64, t.bn = 64, t.t0 = 2, t.t1 = 2;
    }
    t.wg_size = t.t0 * t.t1 * caps.subgroup_size;
    return t;
  }
  if (path != GemmPath::kScalar && coop_ok && dtype == DType::kF16) {
    t.coopmat = true;
    // Measured on an H200 (tests/gpu/ops/matmul_test.cpp, CoopMatTileSweep, one run): the loop is
    // bound by each slice's global-load round trip, so BK = 32 with two slices of loads in flight
    // (PREFETCH = 2) wins on every MASt3R shape over BK = 16 (encoder fc1 106 vs 90 TFLOP/s, fc2
    // 106 vs 84, head fc2 118 vs 76, 4096³ nt 143 vs 87), although it holds one 128×128 tile per
    // SM instead of two. Grids under 64 such tiles take 64×64 tiles (or split K: GemmSplitK).
    // B row-major ([K, N], the layout Mast3rWeights uploads linear weights in) is 3–11 % faster
    // than [N, K] at these tiles, with a distinct B per repetition as a model's layers have (same
    // sweep: encoder qkv 82 vs 79 TFLOP/s, fc1 111 vs 105, fc2 113 vs 102, head fc2 125 vs 117).
    // With it, grids of many waves take BK = 16 with one register set, which holds two tiles per
    // SM (batch 8: encoder qkv 137 vs 119, fc1 139 vs 119, fc2 150 vs 133; 4096³ 162 vs 147) but
    // loses at a few waves (batch 1: fc1 104 vs 111, fc2 72 vs 113). Among smaller grids only K ≤
    // 768 (the decoder's fc1 and qkv) favours BK = 16, with two sets (60 vs 53; K = 1024: 94 vs 111).
    // The grid is what counts, so a batch's problems count together: the DPT's convolutions at 1/8
    // and 1/16 resolution are small per image but 8 or 16 images deep at batch 8.
    // Whole tiles load without bounds checks (ALIGNED in matmul_coopmat.comp), and then the many-wave
    // BK = 16 grids keep two slices in flight (127 registers: still two tiles per SM): 4096³ 170
    // vs 166 TFLOP/s, batch-8 encoder fc2 167 vs 163; with the checks one set had won (162 vs 154),
    // and the MASt3R batch-8 encoder went 54.8 → 53.1 ms.
    const int64_t tiles = ceil_div(m, 128) * ceil_div(n, 128) * std::max<int64_t>(batch, 1);
    t.bk = 32;
    t.prefetch = 2;
    if (tiles >= 64) {
      t.bm = 128, t.bn = 128, t.t0 = 2, t.t1 = 4;
      // Half-size tiles where a 128-wide one would be half padding: ResNet-50's convolutions at
      // batch 32 in NCHW (H200, the NCHW tile sweep of 2026-11-28 in PERFORMANCE_LOG.md). 64
      // output channels take 64×64 tiles (the 3×3 at 56×56 154 → 105 µs, the 1×1 of 256 in 87 →
      // 64; the stem 262 → 226, where 64×128 gave 210), 7×7 maps (N = 49) 128×64 (the 3×3 of 512
      // channels 268 → 146 µs at BK = 32, the 1×1 of 2048 in 123 → 62, of 512 in with a residual
      // 111 → 78 at BK = 16). Short K alone does not pay for them there (the 1×1 of 64 in to 256
      // out with a residual 116 → 123 µs); channels-last it does (below).
      if (m <= 64) {
        t.bm = 64, t.bn = 64, t.t0 = 2, t.t1 = 2;
        t.bk = 16;
      } else if (n <= 64) {
        t.bn = 64, t.t0 = 4, t.t1 = 2;
        t.bk = k >= 2048 ? 32 : 16;
      } else if (!b_row_major && k <= 512 && caps.max_workgroup_invocations >= 512) {
        // A GEMM of a few K slices is mostly its epilogue, which each subgroup runs fragment by
        // fragment: 16 subgroups of 2×2 fragments (512 invocations; 105 registers, one workgroup an
        // SM as with 8) share it among twice the subgroups. ResNet-50's channels-last 1×1
        // convolutions at batch 32 (H200, Conv2dNhwcSweepTest.ResNet50Batch32TileSweep, 8 against
        // 16 subgroups): K = 256 108 → 93 µs (into 128 channels), 108 → 91 (strided, into 512), 56 →
        // 49 (into 1024 with a residual); K = 512 84 → 76, 52 → 49; K = 128 82 → 73 (64×128 tiles
        // of 8 subgroups before); K ≥ 1024 no gain (43 → 43, 87 → 87), and the 3×3 convolutions
        // (K ≥ 1152) lose (90 → 94, 83 → 89). K = 64 takes 128×64 tiles: 112 → 109 µs.
        t.t0 = 4, t.t1 = 4;
        if (k <= 64) t.bn = 64, t.bk = 16;
      } else if (b_row_major && tiles >= 512) {
        t.bk = 16;
        t.prefetch = t.whole_tiles(m, n, k) ? 2 : 1;
      } else if (b_row_major && k <= 768) {
        t.bk = 16;
      }
    } else if (!b_row_major && tiles >= 32 && k >= 2048 && caps.shader_core_count > 0) {
      // Half a wave of 128×128 tiles with a long K split in two (GemmSplitK, wave_balanced_splits)
      // rather than 64×64 tiles: ResNet-50's channels-last 3×3 convolution of 512 channels at 7×7
      // and batch 32 (52 tiles, H200, Conv2dNhwcTest.ResNet50Batch32TileSweep) 148 → 105 µs.
      t.bm = 128, t.bn = 128, t.t0 = 2, t.t1 = 4;
    } else {
      t.bm = 64, t.bn = 64, t.t0 = 2, t.t1 = 2;
    }
    t.wg_size = t.t0 * t.t1 * caps.subgroup_size;
    return t;
  }
  // Scalar tiles (BM, BN, BK, TM, TN). On a CPU driver a problem's tiles count per image, as they
  // were measured; the GPU rules count the grid's.
  const int64_t per_image = ceil_div(m, 128) * ceil_div(n, 128);
  const int64_t tiles128 = per_image * std::max<int64_t>(batch, 1);
  // The GPU rules below were measured on B stored [N, K] (channels-last convolutions' weights,
  // Conv2dNhwcSweepTest.ResNet50Batch32ScalarTileSweep on an H200); the NCHW convolutions, whose B is
  // gathered row-major, keep the rules of a CPU driver.
  const bool gpu = caps.shader_core_count > 0 && !b_row_major;
  t.bk = 16;
  if (m <= 16 && n > 16) {
    t.bm = 16, t.bn = 128, t.t0 = 1, t.t1 = 8;
  } else if (n <= 16 && m > 16) {
    t.bm = 128, t.bn = 16, t.t0 = 8, t.t1 = 1;
  } else if (gpu && tiles128 >= 64 && (n <= 64 || k <= 128)) {
    // A 128-wide tile is half padding for 64 columns, and a GEMM of a few K slices is its
    // epilogue, which half-width tiles share among twice the workgroups: ResNet-50's 3×3 at 56×56
    // into 64 channels 506 → 303 µs, the stem 849 → 538, the 1×1 of 64 channels into 256 with a
    // residual 227 → 203, of 128 into 512 166 → 155.
    t.bm = 128, t.bn = 64, t.t0 = 8, t.t1 = 4;
    t.bk = 8;
  } else if (gpu && tiles128 >= 32 && tiles128 < 64 && k >= 4096) {
    // Half a wave of long-K tiles: 8×8 micro-tiles in 128 invocations (the 3×3 of 512 channels at
    // 7×7 and batch 32: 442 µs on 64×64 tiles, 386 on these). Smaller grids split 64×64 tiles over K
    // (GemmSplitK): at batch 1 these tiles took ResNet-50 from 1.31–1.37 to 1.43–1.47 ms.
    t.bm = 64, t.bn = 128, t.t0 = 8, t.t1 = 8;
  } else if (gpu ? tiles128 >= 64 : per_image >= 256) {
    // On a GPU from half a wave of 128×128 tiles up, deep K with two 16-deep slices in shared
    // memory (33 KiB, where the device has it; lavapipe has 32): the 3×3 of 256 channels at 14×14
    // (98 tiles) 439 µs on 64×64 tiles, 419 at BK = 8, 306 at BK = 16.
    t.bm = 128, t.bn = 128, t.t0 = 8, t.t1 = 8;
    const uint32_t deep_bytes = 2 * 16 * (128 / 4 + 1) * 2 * 16;
    t.bk = gpu && k >= 256 && caps.max_compute_shared_memory >= deep_bytes + 64 ? 16 : 8;
  } else {
    t.bm = 64, t.bn = 64, t.t0 = 4, t.t1 = 4;
  }
  t.wg_size = (t.bm / t.t0) * (t.bn / t.t1);
  return t;
}

Status matmul_strided(Graph& g, const Capabilities& caps, const Arg& a, const Arg& b, const Arg& c,
                      const MatmulGeometry& geo, const MatmulOptions& opt) {
  const auto& [m, n, k, batch, lda, ldb, ldc, stride_a, stride_b, stride_c, offset_a, offset_b, offset_c] = geo;
  const DType dtype = c.dtype();
  if (!float_dtype(dtype))
    return invalid_argument(std::string("matmul: dtype ") + dtype_name(dtype) + " not supported");
  if (a.dtype() != dtype || b.dtype() != dtype || (opt.bias && opt.bias->dtype() != dtype) ||
      (opt.epilogue.residual && opt.epilogue.residual->dtype() != dtype)) {
    return invalid_argument("matmul: all operands must share one dtype");
  }
  if (m < 0 || n < 0 || k < 0 || batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0 || offset_a < 0 ||
      offset_b < 0 || offset_c < 0) {
    return invalid_argument("matmul: negative size, stride or offset");
  }
  if (lda < std::max<int64_t>(1, opt.transpose_a ? m : k) || ldb < std::max<int64_t>(1, opt.transpose_b ? k : n) ||
      ldc < std::max<int64_t>(1, n)) {
    return invalid_argument("matmul: leading dimension smaller than the row it strides over");
  }
  for (int64_t v : {m, n, k, batch, lda, ldb, ldc, stride_a, stride_b, stride_c}) {
    if (v > kU32Max) return invalid_argument("matmul: size or stride beyond 32 bits");
  }
  const std::optional<RopeEpilogue>& rope = opt.epilogue.rope;
  if (rope) {
    const Shape& sc = c.shape();
    const int64_t tokens = rope->grid.h * rope->grid.w;
    if (opt.epilogue.activation != Activation::kNone || opt.epilogue.residual || opt.beta != 0.0f ||
        (opt.bias && opt.bias_per_row)) {
      return invalid_argument("matmul: the RoPE epilogue takes no activation, residual, beta or per-row bias");
    }
    if (batch != 1 || sc.size() != 3 || tokens <= 0 || sc[1] != tokens || sc[0] * tokens != m || sc[2] != ldc ||
        offset_c != 0 || rope->heads <= 0 || rope->head_dim <= 0 || rope->head_dim % 4 != 0 ||
        rope->heads * rope->head_dim > n) {
      return invalid_argument("matmul: the RoPE epilogue needs C [B, h·w, N] written whole, rows being tokens, and " +
                              std::to_string(rope->heads) + " heads of " + std::to_string(rope->head_dim) +
                              " columns within N = " + std::to_string(n));
    }
  }
  if (m == 0 || n == 0 || batch == 0) return Status::ok();  // nothing to write

  std::vector<Operand> ops;
  const int64_t kk = std::max<int64_t>(k, 1);
  ops.push_back(
      {&a, "A", offset_a, stride_a, opt.transpose_a ? 1 : lda, 0, (kk - 1) * (opt.transpose_a ? lda : 1), true, false});
  ops.push_back(
      {&b, "B", offset_b, stride_b, 0, opt.transpose_b ? ldb : 1, (kk - 1) * (opt.transpose_b ? 1 : ldb), false, true});
  ops.push_back({&c, "C", offset_c, stride_c, ldc, 1, 0, true, true});
  if (opt.epilogue.residual)
    ops.push_back({&*opt.epilogue.residual, "residual", offset_c, stride_c, ldc, 1, 0, true, true});
  if (opt.bias) {
    ops.push_back({&*opt.bias, "bias", 0, 0, opt.bias_per_row ? 1 : 0, opt.bias_per_row ? 0 : 1, 0, opt.bias_per_row,
                   !opt.bias_per_row});
  }
  for (const Operand& op : ops) {
    const bool reads_k = op.arg == &a || op.arg == &b;
    if (reads_k && k == 0) continue;
    const int64_t last = op.offset + op.footprint(batch, m, n);
    if (last > op.arg->numel()) {
      return invalid_argument(std::string("matmul: operand ") + op.name + " of " + std::to_string(op.arg->numel()) +
                              " elements is too small for " + std::to_string(batch) + " x " + dims(m, n, k) +
                              " (needs " + std::to_string(last) + ")");
    }
  }
  if (batch > 1 && stride_c < (m - 1) * ldc + n) return invalid_argument("matmul: batches of C overlap");
  if (operands_overlap(c, a) || operands_overlap(c, b)) return invalid_argument("matmul: C overlaps an input (A or B)");

  RECON_ASSIGN_OR_RETURN(GemmTiling tiling,
                         choose_gemm_tiling(caps, dtype, m, n, k, opt.path, !opt.transpose_b, batch));

  // Chunk plan: shrink batch, then M, then N until every oversized operand's window fits.
  const int64_t esz = static_cast<int64_t>(dtype_size(dtype));
  const int64_t align = static_cast<int64_t>(std::max<VkDeviceSize>(caps.min_storage_buffer_offset_alignment, 4));
  const int64_t limit = (static_cast<int64_t>(caps.max_storage_buffer_range) - align) / esz;
  int64_t bc = std::min<int64_t>(batch, caps.max_workgroup_count[2]);
  int64_t mc = std::min<int64_t>(m, int64_t{caps.max_workgroup_count[0]} * tiling.bm);
  int64_t nc = std::min<int64_t>(n, int64_t{caps.max_workgroup_count[1]} * tiling.bn);
  for (;;) {
    const Operand* worst = nullptr;
    int64_t worst_size = limit;
    for (const Operand& op : ops) {
      if (op.arg->bytes() <= caps.max_storage_buffer_range) continue;
      if (op.arg->is_slot()) {
        return invalid_argument(std::string("matmul: operand ") + op.name + " (" + std::to_string(op.arg->bytes()) +
                                " bytes) exceeds maxStorageBufferRange; pass a tensor so that it can be split");
      }
      const int64_t size = op.footprint(bc, mc, nc);
      if (size > worst_size) worst = &op, worst_size = size;
    }
    if (worst == nullptr) break;
    if (bc > 1 && worst->sb > 0) {
      bc = ceil_div(bc, 2);
    } else if (worst->uses_m && mc > 1 && worst->sm > 0) {
      mc = shrink(mc, tiling.bm);
    } else if (worst->uses_n && nc > 1 && worst->sn > 0) {
      nc = shrink(nc, tiling.bn);
    } else {
      return invalid_argument(std::string("matmul: operand ") + worst->name + " (" +
                              std::to_string(worst->arg->bytes()) +
                              " bytes) exceeds maxStorageBufferRange and cannot be split along batch, M or N");
    }
  }

  uint32_t flags = static_cast<uint32_t>(opt.epilogue.activation);
  if (opt.bias) flags |= kGemmFlagBias | (opt.bias_per_row ? kGemmFlagBiasPerRow : 0);
  if (opt.epilogue.residual) flags |= kGemmFlagResidual;
  if (opt.epilogue.residual && opt.epilogue.residual_first) flags |= kGemmFlagResidualFirst;
  if (opt.beta != 0.0f) flags |= kGemmFlagBeta;
  const Access c_access = opt.beta != 0.0f ? Access::kReadWrite : Access::kWrite;
  const char* shader = tiling.coopmat ? (dtype == DType::kF32 ? "matmul_coopmat_f32" : "matmul_coopmat_f16")
                                      : (dtype == DType::kF32 ? "matmul_f32" : "matmul_f16");

  // Split-K only for problems that take one dispatch: chunked ones have grids large enough already.
  // The RoPE epilogue rotates in the tensor-core epilogue when it can: one dispatch, no split, two
  // fragments of 16 columns per subgroup (a pair's distance at head_dim 64), and both spilled at
  // once, into the A and the B staging buffers of the tile loop.
  const bool one_dispatch = bc == batch && mc == m && nc == n;
  const uint32_t subgroups = tiling.wg_size / std::max<uint32_t>(caps.subgroup_size, 1);
  const uint32_t a_tile =
      (opt.transpose_a ? tiling.bk : tiling.bm) * ((opt.transpose_a ? tiling.bm : tiling.bk) / 8 + 1);
  const uint32_t b_tile =
      (opt.transpose_b ? tiling.bn : tiling.bk) * ((opt.transpose_b ? tiling.bk : tiling.bn) / 8 + 1);
  const bool fused_rope = rope && tiling.coopmat && one_dispatch && rope->head_dim == 64 &&
                          tiling.bn == 2 * 16 * tiling.t1 && 2 * a_tile >= 64 * subgroups &&
                          2 * b_tile >= 64 * subgroups;
  GemmSplitK split;
  if (one_dispatch && !fused_rope) {
    RECON_ASSIGN_OR_RETURN(split, GemmSplitK::plan(g, caps, tiling, m, n, k, batch));
  }
  if (!tiling.coopmat && tiling.splits > 1) shader = dtype == DType::kF32 ? "matmul_split_f32" : "matmul_split_f16";
  for (int64_t b0 = 0; b0 < batch; b0 += bc) {
    const int64_t bn_ = std::min(bc, batch - b0);
    for (int64_t m0 = 0; m0 < m; m0 += mc) {
      const int64_t mn = std::min(mc, m - m0);
      for (int64_t n0 = 0; n0 < n; n0 += nc) {
        const int64_t nn = std::min(nc, n - n0);
        std::vector<GemmWindow> w;
        for (const Operand& op : ops) {
          auto win = gemm_window(caps, *op.arg, op.start(b0, m0, n0), op.footprint(bn_, mn, nn));
          if (!win.is_ok()) return win.status().with_context(std::string("matmul: operand ") + op.name);
          w.push_back(std::move(win).value());
        }
        const GemmWindow& wa = w[0];
        const GemmWindow& wb = w[1];
        const GemmWindow& wc = w[2];
        const GemmWindow* wr = opt.epilogue.residual ? &w[3] : nullptr;
        const GemmWindow* wbias = opt.bias ? &w.back() : nullptr;
        MatmulPush push{};
        push.m = static_cast<uint32_t>(mn);
        push.n = static_cast<uint32_t>(nn);
        push.k = static_cast<uint32_t>(k);
        push.lda = static_cast<uint32_t>(lda);
        push.ldb = static_cast<uint32_t>(ldb);
        push.ldc = static_cast<uint32_t>(ldc);
        push.stride_a = static_cast<uint32_t>(stride_a);
        push.stride_b = static_cast<uint32_t>(stride_b);
        push.stride_c = static_cast<uint32_t>(stride_c);
        push.off_a = static_cast<uint32_t>(wa.offset);
        push.off_b = static_cast<uint32_t>(wb.offset);
        push.off_c = static_cast<uint32_t>(wc.offset);
        push.off_r = wr ? static_cast<uint32_t>(wr->offset) : 0;
        push.off_bias = wbias ? static_cast<uint32_t>(wbias->offset) : 0;
        push.alpha = opt.alpha;
        push.beta = opt.beta;
        push.flags = flags;
        if (fused_rope) {
          push.rope_cols = static_cast<uint32_t>(rope->heads * rope->head_dim);
          push.rope_tokens = static_cast<uint32_t>(rope->grid.h * rope->grid.w);
          push.rope_grid_w = static_cast<uint32_t>(rope->grid.w);
          push.rope_base = rope->base;
        }
        for (int64_t off : {wa.offset, wb.offset, wc.offset, wr ? wr->offset : 0, wbias ? wbias->offset : 0}) {
          if (off > kU32Max) return invalid_argument("matmul: element offset beyond 32 bits");
        }

        // Vector loads need every row start of the operand (along its contiguous direction) at a
        // multiple of the core's vector width; vector epilogue stores need that of C, the residual
        // and a per-column bias.
        const int64_t width = tiling.vector_width();
        const bool vec_a = (opt.transpose_a ? mn : k) % width == 0 && lda % width == 0 &&
                           (bn_ == 1 || stride_a % width == 0) && wa.offset % width == 0;
        const bool vec_b = (opt.transpose_b ? k : nn) % width == 0 && ldb % width == 0 &&
                           (bn_ == 1 || stride_b % width == 0) && wb.offset % width == 0;
        const bool vec_c = ldc % width == 0 && (bn_ == 1 || stride_c % width == 0) && wc.offset % width == 0 &&
                           (wr == nullptr || wr->offset % width == 0) &&
                           (wbias == nullptr || opt.bias_per_row || wbias->offset % width == 0);
        if (!tiling.coopmat) {
          push.flags |= (opt.transpose_a ? kFlagTransA : 0) | (opt.transpose_b ? kFlagTransB : 0);
          // The scalar core's 4-wide stores also need whole runs of 4 columns.
          tiling.vec = (vec_a ? kGemmVecA : 0) | (vec_b ? kGemmVecB : 0) | (vec_c && nn % 4 == 0 ? kGemmVecC : 0);
        }
        const std::array<uint32_t, 8> core = tiling.spec();
        std::vector<uint32_t> spec(core.begin(), core.end());
        if (tiling.coopmat) {
          spec.push_back(opt.transpose_a ? 1 : 0);
          spec.push_back(opt.transpose_b ? 1 : 0);
          spec.push_back(vec_a ? 1 : 0);
          spec.push_back(vec_b ? 1 : 0);
          spec.push_back(vec_c ? 1 : 0);
          spec.push_back(fused_rope ? 1 : 0);
          // Whole tiles with 16-byte loads: the tile loop's loads need no bounds checks.
          spec.push_back(vec_a && vec_b && tiling.whole_tiles(mn, nn, k) ? 1 : 0);
        }
        const Arg& bias_arg = wbias ? wbias->arg : wa.arg;  // unused bindings get a dummy
        const Arg& res_arg = wr ? wr->arg : wa.arg;
        RECON_RETURN_IF_ERROR(g.dispatch(shader, spec,
                                         {{wa.arg, Access::kRead},
                                          {wb.arg, Access::kRead},
                                          {wc.arg, c_access},
                                          {bias_arg, Access::kRead},
                                          {res_arg, Access::kRead},
                                          split.partials(wa.arg),
                                          split.arrivals(wa.arg)},
                                         push, tiling.groups(mn, nn, bn_)));
      }
    }
  }
  if (rope && !fused_rope) {
    return rope2d(g, c, 0, rope->heads, rope->head_dim, rope->grid, rope->base);
  }
  return Status::ok();
}

Status matmul(Graph& g, const Capabilities& caps, const Arg& a, const Arg& b, const Arg& c, const MatmulOptions& opt) {
  const Shape &sa = a.shape(), &sb = b.shape(), &sc = c.shape();
  const auto rank_ok = [](const Shape& s) { return s.size() == 2 || s.size() == 3; };
  if (!rank_ok(sa) || !rank_ok(sb) || !rank_ok(sc)) {
    return invalid_argument("matmul: operands must be 2-D or 3-D (batched), got " + shape_string(sa) + " x " +
                            shape_string(sb) + " -> " + shape_string(sc));
  }
  const int64_t batch = sc.size() == 3 ? sc[0] : 1;
  const auto rows = [](const Shape& s) { return s[s.size() - 2]; };
  const auto cols = [](const Shape& s) { return s[s.size() - 1]; };
  MatmulGeometry geo;
  geo.batch = batch;
  geo.m = opt.transpose_a ? cols(sa) : rows(sa);
  geo.k = opt.transpose_a ? rows(sa) : cols(sa);
  const int64_t kb = opt.transpose_b ? cols(sb) : rows(sb);
  geo.n = opt.transpose_b ? rows(sb) : cols(sb);
  const std::string what = shape_string(sa) + (opt.transpose_a ? "^T" : "") + " x " + shape_string(sb) +
                           (opt.transpose_b ? "^T" : "") + " -> " + shape_string(sc);
  if (kb != geo.k || rows(sc) != geo.m || cols(sc) != geo.n)
    return invalid_argument("matmul: shapes " + what + " do not agree");
  if ((sa.size() == 3 && sa[0] != batch) || (sb.size() == 3 && sb[0] != batch) ||
      (sc.size() == 2 && (sa.size() == 3 || sb.size() == 3))) {
    return invalid_argument("matmul: batch sizes of " + what + " do not agree");
  }
  geo.lda = cols(sa);
  geo.ldb = cols(sb);
  geo.ldc = geo.n;
  geo.stride_a = sa.size() == 3 ? rows(sa) * cols(sa) : 0;
  geo.stride_b = sb.size() == 3 ? rows(sb) * cols(sb) : 0;
  geo.stride_c = geo.m * geo.n;
  if (opt.bias) {
    const int64_t want = opt.bias_per_row ? geo.m : geo.n;
    if (opt.bias->shape() != Shape{want}) {
      return invalid_argument("matmul: bias " + shape_string(opt.bias->shape()) + " should be [" +
                              std::to_string(want) + "] for " + what);
    }
  }
  if (opt.epilogue.residual && opt.epilogue.residual->shape() != sc) {
    return invalid_argument("matmul: residual " + shape_string(opt.epilogue.residual->shape()) + " differs from C " +
                            shape_string(sc));
  }
  return matmul_strided(g, caps, a, b, c, geo, opt);
}

}  // namespace recon::gpu::ops
