// Layout ops: views (reshape, row ranges) and the copies that move elements between layouts —
// permute/transpose, slice, split, concat and MASt3R's NCHW ↔ token-major conversions. Copies move
// bits and never compute on values, so they take every dtype (f32/i32 as 32-bit words, f16, u8;
// u8 needs the device's 8-bit storage feature). They must not be used for dtype conversion.
//
// Reshape is a view, not a kernel: `Tensor::reshape` (or `reshape_view` here for an Arg, which also
// works on graph slots) gives the same elements under another shape.
//
// Large tensors. A binding may span at most max_binding_bytes(): the device's maxStorageBufferRange
// (128 MiB on lavapipe, 4 GiB − 1 on NVIDIA), capped at 2 GiB for the shaders' index arithmetic.
// Every op of the library that can meet larger operands splits its work into several dispatches over ranges of an outer
// axis, binding windows
// (`window`) that start on kBindingOffsetAlign boundaries and pass the remainder to the kernel as an
// element offset. Here that means:
//   - permute/transpose: split along the first output axis of size > 1 when each chunk's reads
//     fit a window — in practice the batch axis with perm[0] == 0; otherwise refused;
//   - slice/split: split along axis 0;
//   - concat: along the axes before `axis`, else (axis 0) per input in flat ranges.
// A graph slot cannot be viewed by rows, so an oversized slot operand is refused (bind a tensor).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// Vulkan guarantees maxStorageBufferRange ≥ 2^27 bytes on every device (lavapipe has exactly
// that): the limit until a Runtime has reported its device.
inline constexpr uint64_t kGuaranteedBindingBytes = uint64_t{1} << 27;
// The most one binding of these ops may span on any device. The shaders index elements with uint32
// arithmetic (index + window base + the grid rounded up to whole workgroups) and drivers address
// storage buffers with 32-bit byte offsets; 2^31 bytes keeps both far from wrapping, for every
// element size down to u8.
inline constexpr uint64_t kMaxBindingBytesCap = uint64_t{1} << 31;
// The largest minStorageBufferOffsetAlignment Vulkan allows; row views start on multiples of it.
inline constexpr uint64_t kBindingOffsetAlign = 256;

// What a device with this maxStorageBufferRange lets the ops bind: the range rounded down to
// kBindingOffsetAlign and capped at kMaxBindingBytesCap (0 for a range under 256 bytes).
uint64_t binding_limit_for(uint64_t max_storage_buffer_range);
// Runtime::create reports its device here. The limit is process-wide, because the ops that split
// with it take no device: it is the smallest binding_limit_for() of every device reported so far
// (kGuaranteedBindingBytes before the first), so it is valid on each of them. A process that
// opens a small device and a large one splits at the small one's limit on both (correct; the
// large device makes a few more dispatches than it needs). Thread-safe.
void note_device_binding_limit(uint64_t max_storage_buffer_range);
// The limit the ops split at: the device limit above, or lower while a test has lowered it to
// exercise splitting on small tensors (tests only; process-wide; never above the device limit;
// 0 restores the device limit).
uint64_t max_binding_bytes();
void set_max_binding_bytes_for_testing(uint64_t bytes);
// The highest rank the strided kernels take (after merging dimensions that stay adjacent).
inline constexpr int kMaxLayoutRank = 6;

// ---- Views (no kernel) ----

// The same elements under another shape (numel must match). Works on tensors and graph slots.
Result<Arg> reshape_view(const Arg& a, const Shape& shape);
// Rows [begin, end) of axis 0. A slot can only be "viewed" whole. The view's offset is the
// caller's to keep aligned: take row ranges from rows_per_dispatch, or use `window`.
Result<Arg> row_view(const Arg& a, int64_t begin, int64_t end);
// How many rows of axis 0 one dispatch may take so that every operand's row range, at
// `row_bytes[i]` bytes per row, fits max_binding_bytes() and starts on a kBindingOffsetAlign
// boundary (the count is a multiple of 256 / gcd(row_bytes, 256)), for splitting with row_view.
// Returns `total_rows` when everything fits at once; INVALID_ARGUMENT when no aligned count fits.
Result<int64_t> rows_per_dispatch(std::span<const uint64_t> row_bytes, int64_t total_rows);
Result<int64_t> rows_per_dispatch(std::initializer_list<uint64_t> row_bytes, int64_t total_rows);

// A binding window over elements [begin, end) of an operand taken flat: `arg` starts at the
// nearest kBindingOffsetAlign boundary at or below `begin`, and kernels add `base` (< 256 / element
// size) to their indices. The whole operand when it fits one binding (then base = begin).
// "Fits" here and below means ≤ max_binding_bytes(). Any row count works with windows, so big
// rows of odd sizes still split; the ops of this library use these.
struct Window {
  Arg arg;
  uint32_t base = 0;
};
Result<Window> window(const Arg& a, int64_t begin, int64_t end);
// Rows per dispatch for splitting with `window`: every operand's rows plus the alignment slack
// fit. `total_rows` when every operand fits whole; INVALID_ARGUMENT when not even one row fits.
// Operands bound whole (broadcast along the rows) pass 0.
Result<int64_t> rows_per_window(std::span<const uint64_t> row_bytes, int64_t total_rows);
Result<int64_t> rows_per_window(std::initializer_list<uint64_t> row_bytes, int64_t total_rows);

// ---- Copies ----

// out = in.permute(perm): out.shape[d] == in.shape[perm[d]]. Any permutation of up to 6 axes after
// merging axes that stay adjacent (so higher ranks work when they collapse). Permutations that
// collapse to a (batched) 2-D transpose take a tiled shared-memory kernel; the rest a strided gather.
Status permute(Graph& g, const Arg& in, const Arg& out, const std::vector<int>& perm);
// Swaps two axes (negative axes count from the end).
Status transpose(Graph& g, const Arg& in, const Arg& out, int dim0, int dim1);

// One axis of a slice, with Python's semantics: negative start/stop count from the end, then both
// are clamped to [0, dim] for a step ≥ 1, or to [−1, dim − 1] for a step ≤ −1 (which walks
// backwards: start = INT64_MAX is the last element, stop = INT64_MIN runs through the first).
// Output length ceil((stop − start) / step), or 0.
struct SliceAxis {
  int64_t start = 0;
  int64_t stop = INT64_MAX;
  int64_t step = 1;
};
// out = in[axes[0], axes[1], ...]; axes beyond axes.size() are taken whole. out's shape must match.
Status slice(Graph& g, const Arg& in, const Arg& out, const std::vector<SliceAxis>& axes);

// out = cat(inputs, axis): inputs agree with out on every axis but `axis`, whose sizes sum to
// out's. Any number of inputs ≥ 1; each dispatch gathers from up to 7 of them (8 bindings).
Status concat(Graph& g, std::span<const Arg> inputs, int axis, const Arg& out);
Status concat(Graph& g, std::initializer_list<Arg> inputs, int axis, const Arg& out);
// The inverse: consecutive pieces of `in` along `axis`, sized by the outputs' shapes.
Status split(Graph& g, const Arg& in, int axis, std::span<const Arg> outputs);
Status split(Graph& g, const Arg& in, int axis, std::initializer_list<Arg> outputs);

// MASt3R's token ↔ feature-map conversions (spec §3.1, §5.1): token n = y·w + x.
// tokens [B, N, C] → out [B, C, h, w] with N = h·w (h, w taken from out).
Status tokens_to_nchw(Graph& g, const Arg& tokens, const Arg& out);
// in [B, C, h, w] → tokens [B, h·w, C].
Status nchw_to_tokens(Graph& g, const Arg& in, const Arg& tokens);

}  // namespace recon::gpu::ops
