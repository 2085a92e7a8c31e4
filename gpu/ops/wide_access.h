// How the memory-bound kernels access memory: in 16-byte words (shaders/wide_io.glsl) where the
// extent and element offsets allow, else element by element. One 16-byte access per invocation and
// operand is what reaches HBM bandwidth; fp16 read as 2-byte scalars ran at about half the fp32 GB/s
// on an H200. The row kernels (norms, softmax) hold a row per workgroup (row_schedule); the
// element-wise ones loop a fixed grid over the words (grid_stride_groups). This header only picks
// paths and launch geometry; it launches nothing.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "gpu/tensor.h"

namespace recon::gpu::ops {

inline constexpr uint64_t kWordBytes = 16;

// Elements of `dtype` in one 16-byte word (4 for f32, 8 for f16).
inline uint32_t elements_per_word(DType dtype) {
  return static_cast<uint32_t>(kWordBytes / dtype_size(dtype));
}

// The launch of a one-row-per-workgroup kernel (layer_norm, rms_norm, l2_normalize, softmax):
// their specialisation constants WG, WORDS and WIDE, in that order (spec()).
struct RowSchedule {
  uint32_t wg = 32;    // invocations per row (power of two, 32..256)
  uint32_t words = 1;  // 16-byte words of the row each invocation holds in registers (wide)
  uint32_t wide = 0;   // 1: the row is read once, in words, and kept in registers
  std::array<uint32_t, 3> spec() const { return {wg, words, wide}; }
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

// Workgroups (of 256 invocations) of the grid-stride kernels (binary_words.comp, cast_words.comp,
// copy_grid.comp, upsample.comp's word path): 16 per SM on a 132-SM H200, each invocation looping over several words,
// which reached 3.7 TB/s where one workgroup per 256 words reached 3.1 (MemoryBench, elementwise_test). Smaller jobs
// launch one invocation per item.
inline constexpr uint64_t kGridStrideGroups = 2048;
inline uint32_t grid_stride_groups(uint64_t items) {
  return static_cast<uint32_t>(std::clamp<uint64_t>((items + 255) / 256, 1, kGridStrideGroups));
}

}  // namespace recon::gpu::ops
