// Converts between f32, f16 and i32 storage: to a float rounds to nearest even, a float to i32
// truncates toward zero (beyond i32's range the result is undefined, as in ONNX); the same dtype is a
// plain copy. cast_to_bool, is_nan and is_inf write booleans, i32 0 or 1 (ONNX's bool on the
// device).
// Operands over max_binding_bytes() (layout.h) are converted in flat chunks, one dispatch each.
//
// Tolerance (tests/gpu/ops/cast_test.cpp): exact, bit for bit against the CPU's conversions.
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

Status cast(Graph& g, const Arg& in, const Arg& out);

// out (i32) = in (i32; f32 or f16 truncated toward zero) wrapped into a `bits`-wide integer (8 or
// 16), signed or not, as C++ and NumPy narrow: modulo 2^bits into the type's range (−128..127,
// 0..255, ...). ONNX's int8, uint8, int16 and uint16 live on the device as i32 words; an op whose
// result can leave the type's range wraps it back with this. `in` may be `out`.
Status wrap_int(Graph& g, const Arg& in, const Arg& out, int bits, bool is_signed);

// out (i32) = 1 where in (f32, f16 or i32) is non-zero, else 0; a NaN counts as non-zero, as in
// NumPy's bool(). `invert` swaps 0 and 1 (a logical not).
Status cast_to_bool(Graph& g, const Arg& in, const Arg& out, bool invert = false);

// out (i32) = 1 where in (f32 or f16) is NaN, else 0. Tested on the bits, so a driver's assumption
// that floats are never NaN does not change it.
Status is_nan(Graph& g, const Arg& in, const Arg& out);

// out (i32) = 1 where in (f32 or f16) is +inf (with `positive`) or −inf (with `negative`), else 0.
Status is_inf(Graph& g, const Arg& in, const Arg& out, bool positive = true, bool negative = true);

}  // namespace recon::gpu::ops
