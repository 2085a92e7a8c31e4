#version 450
// uint8 RGB images (row-major, `stride` bytes per row) → the model input 2·(v/255) − 1 as NCHW
// fp32 (spec §2 step 4). The source is read as 32-bit words so no 8-bit storage is needed.
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Src { uint src_words[]; };
layout(binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push {
  uint batch, height, width, stride;  // stride in bytes
  uint image_bytes;                   // distance between consecutive images in the source
} p;

uint load_byte(uint index) { return (src_words[index >> 2] >> ((index & 3u) * 8u)) & 0xffu; }

void main() {
  uint pix = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  uint hw = p.height * p.width;
  if (pix >= p.batch * hw) return;
  uint b = pix / hw, s = pix % hw;
  uint y = s / p.width, x = s % p.width;
  uint base = b * p.image_bytes + y * p.stride + x * 3u;
  for (uint c = 0u; c < 3u; ++c) dst[(b * 3u + c) * hw + s] = float(load_byte(base + c)) * (2.0 / 255.0) - 1.0;
}
