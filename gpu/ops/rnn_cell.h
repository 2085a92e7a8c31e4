// One time step of a recurrent layer (ONNX RNN, GRU, LSTM) for one direction, shaders/rnn_cell.comp:
// the gates' pre-activations from the input (gx: X·Wᵀ + Wb of every step, computed beforehand by one
// GEMM) and from the previous hidden state (gr: H·Rᵀ + Rb, this step's GEMM) become the new hidden
// state (and LSTM's cell state) in one pass, which also writes the step's slice of Y. The state
// lives in `hidden` and `cell`, each holding the previous and the current [N, size] block of the
// direction at element offsets, so the caller alternates two halves and binds whole tensors (graph
// slots included). Gate orders are ONNX's: GRU z, r, h; LSTM i, o, f, c with peepholes i, o, f.
//
// GRU without linear_before_reset multiplies r into H before the GEMM with Rh, so it takes two
// passes: kGruReset writes z over gr's z columns and r ⊙ H into `cell`'s current block (the GEMM
// (r ⊙ H)·Rhᵀ + Rbh then writes gr's h columns), and kGruHidden finishes the step.
//
// Sequence lengths (optional, i32 [N]): a row whose step is at or past its length keeps its state
// and writes 0 to Y, so the final state is the one of its last valid step; a reverse pass meets
// those steps first and starts its sequence at the length's end, as ONNX defines.
//
// Tolerance: fp32 arithmetic with recon's sigmoid and tanh (unary.h, ≤ 2e-6 relative); fp16 storage
// rounds every stored value, the carried state included. Whole layers against a double loop
// (tests/models/onnx/onnx_rnn_test.cpp, 5 steps): fp32 within 1e-6, fp16 within 2e-3 of
// max(1, |want|) (measured 4.9e-7 and 1.2e-3 on lavapipe).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// The shader's MODE constant.
enum class RnnCell : uint32_t { kRnn = 0, kGru = 1, kGruReset = 2, kGruHidden = 3, kLstm = 4 };
// The shader's activation codes (ONNX's names).
enum class RnnActivation : uint32_t { kSigmoid = 0, kTanh = 1, kRelu = 2 };

// Gates per cell: gx and gr rows hold gates × size pre-activations.
int64_t rnn_gates(RnnCell cell);

struct RnnStep {
  RnnCell cell = RnnCell::kRnn;
  std::array<RnnActivation, 3> activations{RnnActivation::kSigmoid, RnnActivation::kTanh, RnnActivation::kTanh};
  int64_t batch = 0, size = 0;
  int64_t gx_offset = 0, gx_stride = 0;  // row n's gates at gx_offset + n·gx_stride
  int64_t prev = 0, cur = 0;             // the [N, size] blocks of hidden and cell read and written
  int64_t step = 0;                      // the time index (compared with the lengths)
  int64_t y_offset = 0, y_stride = 0;    // row n of the step's Y at y_offset + n·y_stride
  int64_t peephole_offset = 0;
};

// gx, gr ([N, gates·size], contiguous), hidden, cell, the optional peepholes, y share one float
// dtype (f32 or f16); lengths are i32 [N]. Every operand must fit one binding.
Status rnn_cell(Graph& g, const RnnStep& step, const Arg& gx, const Arg& gr, const Arg& hidden, const Arg& cell,
                const std::optional<Arg>& peepholes, const std::optional<Arg>& lengths, const std::optional<Arg>& y);

}  // namespace recon::gpu::ops
