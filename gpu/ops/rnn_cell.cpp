#include "gpu/ops/rnn_cell.h"

#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;

// Mirrored by Push in shaders/rnn_cell.comp.
struct RnnCellPush {
  uint32_t batch, size, gx_offset, gx_stride, prev, cur, peep_offset, step, y_offset, y_stride, flags;
};
static_assert(sizeof(RnnCellPush) == 44, "mirrors Push in shaders/rnn_cell.comp");

constexpr uint32_t kPeepholes = 1, kLengths = 2, kWriteY = 4;

}  // namespace

int64_t rnn_gates(RnnCell cell) {
  switch (cell) {
    case RnnCell::kRnn:
      return 1;
    case RnnCell::kLstm:
      return 4;
    default:
      return 3;
  }
}

Status rnn_cell(Graph& g, const RnnStep& s, const Arg& gx, const Arg& gr, const Arg& hidden, const Arg& cell,
                const std::optional<Arg>& peepholes, const std::optional<Arg>& lengths, const std::optional<Arg>& y) {
  const DType dt = gx.dtype();
  if (dt != DType::kF32 && dt != DType::kF16) return invalid_argument("rnn_cell: gx must be f32 or f16");
  for (const Arg* a : {&gr, &hidden, &cell, peepholes ? &*peepholes : &gx, y ? &*y : &gx}) {
    if (a->dtype() != dt) return invalid_argument("rnn_cell: float operands of one dtype");
  }
  if (lengths && (lengths->dtype() != DType::kI32 || lengths->numel() != s.batch)) {
    return invalid_argument("rnn_cell: lengths must be i32 [" + std::to_string(s.batch) + "]");
  }
  const int64_t rows = s.batch * s.size;
  if (s.batch <= 0 || s.size <= 0) return invalid_argument("rnn_cell: empty batch or size");
  if (gr.numel() != s.batch * rnn_gates(s.cell) * s.size) {
    return invalid_argument("rnn_cell: gr must be [N, gates·size], is " + shape_string(gr.shape()));
  }
  if (s.prev + rows > hidden.numel() || s.cur + rows > hidden.numel() || s.prev + rows > cell.numel() ||
      s.cur + rows > cell.numel()) {
    return invalid_argument("rnn_cell: the state blocks lie outside hidden or cell");
  }
  if (s.gx_offset + (s.batch - 1) * s.gx_stride + rnn_gates(s.cell) * s.size > gx.numel()) {
    return invalid_argument("rnn_cell: the gates lie outside gx");
  }
  if (y && s.y_offset + (s.batch - 1) * s.y_stride + s.size > y->numel()) {
    return invalid_argument("rnn_cell: the step lies outside y");
  }
  if (peepholes && s.peephole_offset + 3 * s.size > peepholes->numel()) {
    return invalid_argument("rnn_cell: the peepholes lie outside P");
  }
  for (const Arg* a : {&gx, &gr, &hidden, &cell, peepholes ? &*peepholes : &gx, y ? &*y : &gx}) {
    if (a->bytes() > max_binding_bytes()) return invalid_argument("rnn_cell: every operand must fit one binding");
  }
  const uint32_t flags = (peepholes ? kPeepholes : 0) | (lengths ? kLengths : 0) | (y ? kWriteY : 0);
  const auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  const RnnCellPush push{u(s.batch),           u(s.size), u(s.gx_offset), u(s.gx_stride), u(s.prev), u(s.cur),
                         u(s.peephole_offset), u(s.step), u(s.y_offset),  u(s.y_stride),  flags};
  const uint32_t spec[] = {static_cast<uint32_t>(s.cell), static_cast<uint32_t>(s.activations[0]),
                           static_cast<uint32_t>(s.activations[1]), static_cast<uint32_t>(s.activations[2])};
  // Absent operands are bound to gx and never read; absent Y to gr, which this pass does not
  // write through that binding either.
  return g.dispatch(dt == DType::kF32 ? "rnn_cell_f32" : "rnn_cell_f16", spec,
                    {{gx, Access::kRead},
                     {gr, Access::kReadWrite},
                     {hidden, Access::kReadWrite},
                     {cell, Access::kReadWrite},
                     {peepholes ? *peepholes : gx, Access::kRead},
                     {lengths ? *lengths : gx, Access::kRead},
                     {y ? *y : gr, Access::kWrite}},
                    push, Graph::grid_1d((static_cast<uint64_t>(rows) + kGroup - 1) / kGroup));
}

}  // namespace recon::gpu::ops
