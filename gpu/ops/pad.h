// N-D padding and its relatives, one gather kernel (shaders/pad.comp): out[o] = in[src(o)] with,
// per axis, src = o − begin and, where that falls outside [0, n):
//   kConstant: the element is `value`;
//   kEdge:     src is clamped to the edge;
//   kReflect:  mirrored about the edge without repeating it (NumPy 'reflect'), any number of times;
//   kWrap:     taken modulo n (NumPy 'wrap').
// begin may be negative and out smaller than in (ONNX's negative pads crop). kWrap with begin = 0
// is also ONNX Tile (out a multiple of in) and Expand (size-1 axes repeated): pad_wrap below.
// Moves bits and never computes, so it takes f32, i32 (32-bit words) and f16; a constant is given
// as a double and stored in the tensor's dtype. Ranks up to kMaxPadRank.
//
// Large tensors: in and out must each fit one binding (max_binding_bytes(), layout.h).
//
// Tolerance (tests/gpu/ops/pad_test.cpp): exact (copies).
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/graph.h"

namespace recon::gpu::ops {

inline constexpr int kMaxPadRank = 6;

// The order is the shader's MODE specialisation constant (shaders/pad.comp).
enum class PadMode : uint32_t { kConstant = 0, kEdge = 1, kReflect = 2, kWrap = 3 };

// out.shape[d] may be anything ≥ 0 (the pads after are implied: out − in − begin); in and out have
// one dtype and rank; begin has one entry per axis. kEdge, kReflect and kWrap need in non-empty
// along every axis out reads outside of.
Status pad(Graph& g, const Arg& in, const Arg& out, const std::vector<int64_t>& begin, PadMode mode,
           double value = 0.0);

// out = in repeated along every axis (begin = 0, kWrap): Tile when out is a multiple of in, and
// broadcasting of size-1 axes (Expand) when in has out's rank.
Status pad_wrap(Graph& g, const Arg& in, const Arg& out);

}  // namespace recon::gpu::ops
