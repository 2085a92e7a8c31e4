// How the memory-bound kernels access memory: in 16-byte words (shaders/wide_io.glsl) where the
// extent and element offsets allow, else element by element. One 16-byte access per invocation and
// operand is what reaches HBM bandwidth; fp16 read as 2-byte scalars ran at about half the fp32 GB/s
// on an H200. The row kernels (norms, softmax) hold a row per workgroup (row_schedule; softmax's
// fp16 rows a row per subgroup, softmax_schedule; LayerNorm's workgroups loop over many rows,
// layer_norm_loop_groups); the element-wise ones loop a fixed grid over the words
// (grid_stride_groups). This header only picks paths and launch geometry; it launches nothing.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "gpu/capabilities.h"
#include "gpu/tensor.h"

namespace recon::gpu::ops {

inline constexpr uint64_t kWordBytes = 16;

// Elements of `dtype` in one 16-byte word (4 for f32, 8 for f16).
inline uint32_t elements_per_word(DType dtype) {
  return static_cast<uint32_t>(kWordBytes / dtype_size(dtype));
}

// The launch of a row kernel (layer_norm, rms_norm, l2_normalize, softmax): their specialisation
// constants WG, WORDS and WIDE, in that order (spec()), and the rows each workgroup takes.
struct RowSchedule {
  uint32_t wg = 32;    // invocations per workgroup (power of two, 32..256)
  uint32_t words = 1;  // 16-byte words of the row each invocation holds in registers (wide)
  uint32_t wide = 0;   // 1: the row is read once, in words, and kept in registers; 2: the same,
                       // a row per subgroup (softmax only)
  uint32_t rows_per_group = 1;
  std::array<uint32_t, 3> spec() const { return {wg, words, wide}; }
  uint64_t groups(uint64_t rows) const { return (rows + rows_per_group - 1) / rows_per_group; }
};

// Words per invocation the wide path holds at most; longer rows (> 8192 f32 / 16384 f16 values)
// take the general path, which rereads the row.
inline constexpr uint32_t kMaxRowWords = 8;

// Wide when the row is whole words (cols a multiple of elements_per_word), with about two words
// per invocation and at least 64 invocations for rows of 64 words or more; else the general path
// with one invocation per element up to 256. Two words beat four where they differ (H200,
// RowKernelBench in layer_norm_test.cpp): LayerNorm over 1024 fp32 columns 3.7 against 2.6 TB/s at
// the encoder's batch-8 shape, 3.1 against 2.4 TB/s at 256 MiB; softmax alike either way.
RowSchedule row_schedule(int64_t cols, DType dtype);

// Workgroups for a wide LayerNorm whose workgroups loop over the rows (LOOP = 1 in
// layer_norm.comp), each holding its affine words in registers across its rows: 32 per SM where
// the device reports its SM count and there are at least 12 rows per workgroup, else 0 (a
// workgroup per row). Measured on an H200 (RowKernelBench): 65536 × 1024 fp16 113.5 → 87.8 µs
// (2.37 → 3.06 TB/s), fp32 171 → 141 µs (3.14 → 3.80 TB/s); at the model's shapes (12288–24576
// rows, 3–6 per workgroup) looping was even or up to 9 % slower.
inline constexpr uint32_t kLayerNormLoopGroupsPerSm = 32;
uint32_t layer_norm_loop_groups(const Capabilities& caps, const RowSchedule& schedule, int64_t rows);

// The device's subgroup size where it cannot vary between pipelines (min = max), else 0.
uint32_t fixed_subgroup_size(const Capabilities& caps);

// softmax's schedule: a row per subgroup (wide = 2, 128 invocations) for fp16 rows of more than two
// and at most four words per lane, where the subgroup size is fixed; row_schedule's otherwise.
// Measured on an H200 (RowKernelBench): fp16 65536 × 1024 3.76 against 2.51 TB/s, 24576 × 768 3.09
// against 2.78, decoder-size 12288 × 768 1.63 against 1.36; only 24576 × 1024 lost (3.09 against
// 3.30). fp32 rows (6–8 words per lane) lost everywhere (2.3–2.5 against 3.1–3.7 TB/s), and
// LayerNorm's statistics this way lost at the model's shapes (fp16 1024 columns, 24576 rows: 2.29
// against 3.00 TB/s), so it keeps a row per workgroup.
RowSchedule softmax_schedule(int64_t cols, DType dtype, uint32_t fixed_subgroup);

// Workgroups (of 256 invocations) of the grid-stride kernels (binary_words.comp, cast_words.comp,
// copy_grid.comp, upsample.comp's word path): 16 per SM on a 132-SM H200, each invocation looping over several words,
// which reached 3.7 TB/s where one workgroup per 256 words reached 3.1 (MemoryBench, elementwise_test). Smaller jobs
// launch one invocation per item.
inline constexpr uint64_t kGridStrideGroups = 2048;
inline uint32_t grid_stride_groups(uint64_t items) {
  return static_cast<uint32_t>(std::clamp<uint64_t>((items + 255) / 256, 1, kGridStrideGroups));
}

}  // namespace recon::gpu::ops
