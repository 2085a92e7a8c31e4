#version 450
// uint8 RGB images (row-major, `stride` bytes per row) → the DUNE encoder's input as NCHW fp32:
// MASt3R's normalisation m = (v/255 − 0.5)/0.5, undone and redone with ImageNet statistics as
// AsymmetricMASt3RWithDUNEBackbone._encode_image does: ((m·0.5 + 0.5) − mean[c]) / std[c]. The same
// push constants as mast3r_preprocess.comp; the source is read as 32-bit words.
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Src { uint src_words[]; };
layout(binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push {
  uint batch, height, width, stride;  // stride in bytes
  uint image_bytes;                   // distance between consecutive images in the source
} p;

const float kMean[3] = float[3](0.485, 0.456, 0.406);
const float kStd[3] = float[3](0.229, 0.224, 0.225);

uint load_byte(uint index) { return (src_words[index >> 2] >> ((index & 3u) * 8u)) & 0xffu; }

void main() {
  uint pix = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  uint hw = p.height * p.width;
  if (pix >= p.batch * hw) return;
  uint b = pix / hw, s = pix % hw;
  uint y = s / p.width, x = s % p.width;
  uint base = b * p.image_bytes + y * p.stride + x * 3u;
  for (uint c = 0u; c < 3u; ++c) {
    precise float m = (float(load_byte(base + c)) / 255.0 - 0.5) / 0.5;
    precise float u = m * 0.5 + 0.5;
    dst[(b * 3u + c) * hw + s] = (u - kMean[c]) / kStd[c];
  }
}
