#version 450
// One pass of Pillow's 8-bit separable resampler (libImaging/Resample.c), bit-exact: for every
// output byte, 2^21 + Σ src·k over the tap range in 32-bit integers, >> 22, clamped to 0..255.
// HORIZONTAL=1 filters along x (taps are source columns of the same row), HORIZONTAL=0 along y
// (taps are source rows of the same column). gpu/ops/resize_official.cpp builds the fixed-point
// coefficients on the CPU exactly as Pillow does and proves the sums cannot overflow 32 bits.
//
// Bytes are read and written as 32-bit words (no 8-bit storage feature needed). Each invocation
// writes four consecutive pixels of one output row (output rows are multiples of 16 pixels), i.e.
// three whole words of the packed [rows, cols, 3] output; in the vertical pass the four share
// their taps and read twelve consecutive bytes per source row. Client pages may be the source
// (zero-copy): indices never depend on pixel values, so bytes that change while we read them
// change only the result.
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Src { uint src_words[]; };
// Per output position o along the filtered axis: coeffs[2o] = first tap, coeffs[2o+1] = tap
// count; from k_base, ksize fixed-point weights per position.
layout(binding = 1) readonly buffer Coeffs { int coeffs[]; };
layout(binding = 2) writeonly buffer Dst { uint dst_words[]; };
layout(push_constant) uniform Push {
  uint src_base;    // byte of source (row row_shift, column 0) within the binding
  uint src_stride;  // bytes between source rows
  uint col0;        // vertical pass: source column of output column 0
  uint row_shift;   // vertical pass: subtracted from the first-tap row (rows before the binding)
  uint coef0;       // coefficient position of output row 0 (vertical) or column 0 (horizontal)
  uint ksize;
  uint k_base;
  uint rows, cols;  // output size of this dispatch, in pixels
  uint dst_base;    // first output word
} p;

const int kPrecisionBits = 22;

uint load_byte(uint index) { return (src_words[index >> 2] >> ((index & 3u) * 8u)) & 0xffu; }

// Byte `shift + j` of the words loaded from word at >> 2 (bytes [at, at + 12) of the source).
uint byte_of(uint words[4], uint shift, uint j) {
  uint b = shift + j;
  return (words[b >> 2] >> ((b & 3u) * 8u)) & 0xffu;
}

void main() {
  uint quad = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (quad >= p.rows * (p.cols / 4u)) return;
  uint pixel = quad * 4u;
  uint y = pixel / p.cols, x0 = pixel - y * p.cols;
  int sums[12];
  for (uint j = 0u; j < 12u; ++j) sums[j] = 1 << (kPrecisionBits - 1);
#if HORIZONTAL
  uint row = p.src_base + y * p.src_stride;
  for (uint i = 0u; i < 4u; ++i) {
    uint o = x0 + i + p.coef0;
    uint first = uint(coeffs[2u * o]), count = uint(coeffs[2u * o + 1u]);
    uint k_at = p.k_base + o * p.ksize;
    uint at = row + first * 3u;
    for (uint k = 0u; k < count; ++k, at += 3u) {
      int w = coeffs[k_at + k];
      sums[3u * i] += int(load_byte(at)) * w;
      sums[3u * i + 1u] += int(load_byte(at + 1u)) * w;
      sums[3u * i + 2u] += int(load_byte(at + 2u)) * w;
    }
  }
#else
  uint o = y + p.coef0;
  uint first = uint(coeffs[2u * o]), count = uint(coeffs[2u * o + 1u]);
  uint k_at = p.k_base + o * p.ksize;
  uint at = p.src_base + (first - p.row_shift) * p.src_stride + (x0 + p.col0) * 3u;
  for (uint k = 0u; k < count; ++k, at += p.src_stride) {
    int w = coeffs[k_at + k];
    uint base = at >> 2;
    // A fourth word only when the twelve bytes straddle it: never read past the binding.
    uint words[4] = uint[4](src_words[base], src_words[base + 1u], src_words[base + 2u],
                            (at & 3u) != 0u ? src_words[base + 3u] : 0u);
    for (uint j = 0u; j < 12u; ++j) sums[j] += int(byte_of(words, at & 3u, j)) * w;
  }
#endif
  for (uint i = 0u; i < 3u; ++i) {
    uint word = 0u;
    for (uint j = 0u; j < 4u; ++j) word |= uint(clamp(sums[4u * i + j] >> kPrecisionBits, 0, 255)) << (8u * j);
    dst_words[p.dst_base + quad * 3u + i] = word;
  }
}
