#version 450
// One time step of ONNX's RNN, GRU or LSTM (gpu/ops/rnn_cell.h) for one direction: the gates'
// pre-activations X·Wᵀ + Wb (gx, every step computed at once) and H·Rᵀ + Rb (gr, this step's
// GEMM) are combined into the new hidden (and cell) state, written to the state buffers' `cur`
// half and to Y. One invocation per (batch row, hidden unit). A row whose sequence has ended
// (step ≥ its length) keeps its state and writes 0 to Y. STORE_T storage, fp32 arithmetic.
#include "common.glsl"
#include "unary_math.glsl"

// 0 RNN; 1 GRU with linear_before_reset; 2 and 3 GRU without it, in two passes around the GEMM of
// r ⊙ H: 2 writes z (into gr's z columns) and r ⊙ H (into `cell`'s cur half), 3 finishes; 4 LSTM.
layout(constant_id = 0) const uint MODE = 0;
// Activations f, g, h: 0 sigmoid, 1 tanh, 2 relu.
layout(constant_id = 1) const uint ACT_F = 0;
layout(constant_id = 2) const uint ACT_G = 1;
layout(constant_id = 3) const uint ACT_H = 1;
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer GX { STORE_T gx[]; };
layout(binding = 1) buffer GR { STORE_T gr[]; };
layout(binding = 2) buffer Hidden { STORE_T hidden[]; };
layout(binding = 3) buffer Cell { STORE_T cell[]; };
layout(binding = 4) readonly buffer Peep { STORE_T peep[]; };
layout(binding = 5) readonly buffer Lens { int lens[]; };
layout(binding = 6) writeonly buffer Y { STORE_T y[]; };

// Mirrored by RnnCellPush in gpu/ops/rnn_cell.cpp.
layout(push_constant) uniform Push {
  uint batch, size;            // N rows of `size` hidden units
  uint gx_offset, gx_stride;   // row n's gates in gx start at gx_offset + n·gx_stride
  uint prev, cur;              // offsets of this direction's [N, size] block in hidden and cell
  uint peep_offset;            // P's [i, o, f] of this direction
  uint step;                   // the time index, compared with the lengths
  uint y_offset, y_stride;     // row n of Y at y_offset + n·y_stride
  uint flags;                  // 1 peepholes, 2 lengths, 4 write Y
} p;

float act(uint kind, float x) {
  if (kind == 0u) return recon_sigmoid(x);
  if (kind == 1u) return recon_tanh(x);
  return max(x, 0.0);
}

void main() {
  const uint i = linear_invocation(256);
  if (i >= p.batch * p.size) return;
  const uint n = i / p.size, j = i - n * p.size;
  const uint gates = MODE == 0u ? 1u : MODE == 4u ? 4u : 3u;
  const uint gxi = p.gx_offset + n * p.gx_stride + j;  // gate k at gxi + k·size
  const uint gri = n * gates * p.size + j;
  const uint hi = n * p.size + j;
  const float hp = float(hidden[p.prev + hi]);
  const bool live = (p.flags & 2u) == 0u || int(p.step) < lens[n];

  if (MODE == 2u) {  // GRU, first pass: z, and r ⊙ H for the GEMM with Rh
    const float z = act(ACT_F, float(gx[gxi]) + float(gr[gri]));
    const float r = act(ACT_F, float(gx[gxi + p.size]) + float(gr[gri + p.size]));
    gr[gri] = STORE_T(z);
    cell[p.cur + hi] = STORE_T(r * hp);
    return;
  }
  float h = hp;
  if (MODE == 0u) {
    h = act(ACT_F, float(gx[gxi]) + float(gr[gri]));
  } else if (MODE == 1u || MODE == 3u) {
    float z, hh;
    if (MODE == 1u) {  // h̃ = g(x·Whᵀ + Wbh + r ⊙ (H·Rhᵀ + Rbh))
      z = act(ACT_F, float(gx[gxi]) + float(gr[gri]));
      const float r = act(ACT_F, float(gx[gxi + p.size]) + float(gr[gri + p.size]));
      hh = act(ACT_G, float(gx[gxi + 2u * p.size]) + r * float(gr[gri + 2u * p.size]));
    } else {  // gr holds z and (r ⊙ H)·Rhᵀ + Rbh
      z = float(gr[gri]);
      hh = act(ACT_G, float(gx[gxi + 2u * p.size]) + float(gr[gri + 2u * p.size]));
    }
    h = (1.0 - z) * hh + z * hp;
  } else {  // LSTM, gates i, o, f, c; peepholes i, o, f
    const float cp = float(cell[p.prev + hi]);
    const bool peeps = (p.flags & 1u) != 0u;
    const float pi = peeps ? float(peep[p.peep_offset + j]) : 0.0;
    const float po = peeps ? float(peep[p.peep_offset + p.size + j]) : 0.0;
    const float pf = peeps ? float(peep[p.peep_offset + 2u * p.size + j]) : 0.0;
    const float ig = act(ACT_F, float(gx[gxi]) + float(gr[gri]) + pi * cp);
    const float fg = act(ACT_F, float(gx[gxi + 2u * p.size]) + float(gr[gri + 2u * p.size]) + pf * cp);
    const float cg = act(ACT_G, float(gx[gxi + 3u * p.size]) + float(gr[gri + 3u * p.size]));
    const float c = fg * cp + ig * cg;
    const float og = act(ACT_F, float(gx[gxi + p.size]) + float(gr[gri + p.size]) + po * c);
    h = og * act(ACT_H, c);
    cell[p.cur + hi] = STORE_T(live ? c : cp);
  }
  if (!live) h = hp;
  hidden[p.cur + hi] = STORE_T(h);
  if ((p.flags & 4u) != 0u) y[p.y_offset + n * p.y_stride + j] = STORE_T(live ? h : 0.0);
}
