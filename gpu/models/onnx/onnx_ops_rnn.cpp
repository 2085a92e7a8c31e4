// ONNX's recurrent layers, RNN, GRU and LSTM (opsets 7-18; layout from 14), unrolled over the
// sequence, whose length is a static shape in a compiled graph: one GEMM of X with every
// direction's W for all steps at once (X·Wᵀ + Wb), then per step and direction a GEMM of the
// previous hidden state with R (H·Rᵀ + Rb) and ops::rnn_cell, which applies the gates, keeps the
// state and writes the step's slice of Y in either layout. Y_h and Y_c are sliced out of the state
// at the end. Biases stay on the side they belong to, so GRU's Rbh is inside r ⊙ (…) with
// linear_before_reset and added with (r ⊙ H)·Rhᵀ without it.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/matmul.h"
#include "gpu/ops/rnn_cell.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

using gpu::ops::RnnActivation;
using gpu::ops::RnnCell;

enum class Family { kRnn, kGru, kLstm };

Family family_of(const std::string& op_type) {
  return op_type == "RNN" ? Family::kRnn : op_type == "GRU" ? Family::kGru : Family::kLstm;
}

int64_t gate_count(Family f) {
  return f == Family::kRnn ? 1 : f == Family::kGru ? 3 : 4;
}

// ONNX's defaults: f, g, h as the op uses them.
std::vector<std::string> default_activations(Family f) {
  if (f == Family::kRnn) return {"Tanh"};
  if (f == Family::kGru) return {"Sigmoid", "Tanh"};
  return {"Sigmoid", "Tanh", "Tanh"};
}

std::optional<RnnActivation> activation_named(const std::string& name) {
  if (name == "Sigmoid") return RnnActivation::kSigmoid;
  if (name == "Tanh") return RnnActivation::kTanh;
  if (name == "Relu") return RnnActivation::kRelu;
  return std::nullopt;
}

// 1 or 2, or 0 for a direction ONNX does not define.
int64_t direction_count(const std::string& direction) {
  if (direction == "forward" || direction == "reverse") return 1;
  return direction == "bidirectional" ? 2 : 0;
}

std::vector<std::string> activations_of(const Node& node, Family f) {
  const Attribute* a = node.attribute("activations");
  return a != nullptr ? a->strings : default_activations(f);
}

// Direction `dir`'s f, g, h: the list holds one set for every direction, or one for all.
std::array<RnnActivation, 3> activations_for(const std::vector<std::string>& names, Family f, int64_t dir) {
  const size_t per = default_activations(f).size();
  const size_t first = names.size() > per ? static_cast<size_t>(dir) * per : 0;
  std::array<RnnActivation, 3> acts{RnnActivation::kSigmoid, RnnActivation::kTanh, RnnActivation::kTanh};
  for (size_t k = 0; k < per; ++k) acts[k] = *activation_named(names[first + k]);  // checked at load
  return acts;
}

}  // namespace

std::string check_recurrent(const Node& node, int64_t) {
  const Family f = family_of(node.op_type);
  const Attribute* dir = node.attribute("direction");
  const int64_t dirs = direction_count(dir != nullptr ? dir->s : "forward");
  if (dirs == 0) return "direction '" + dir->s + "'";
  if (const Attribute* layout = node.attribute("layout"); layout != nullptr && layout->i != 0 && layout->i != 1) {
    return "layout " + std::to_string(layout->i);
  }
  if (node.attribute("clip") != nullptr) return "clip (the gates are not clipped)";
  if (const Attribute* forget = node.attribute("input_forget"); forget != nullptr && forget->i != 0) {
    return "input_forget = 1";
  }
  const std::vector<std::string> acts = activations_of(node, f);
  const size_t per_direction = default_activations(f).size();
  if (acts.size() != per_direction && acts.size() != per_direction * static_cast<size_t>(dirs)) {
    return std::to_string(acts.size()) + " activations (" + std::to_string(per_direction) + " per direction)";
  }
  for (const std::string& a : acts) {
    if (!activation_named(a)) return "activation '" + a + "' (Sigmoid, Tanh and Relu run)";
  }
  return {};
}

namespace {

// Input and output positions.
constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kLengths = 4, kInitialH = 5, kInitialC = 6, kPeepholes = 7;

struct Dims {
  int64_t steps = 0, batch = 0, input = 0, hidden = 0, dirs = 1, gates = 1;
  bool batch_first = false;  // layout 1
};

Status expect_shape(OpContext& ctx, const char* what, const Shape& got, const Shape& want) {
  if (got == want) return Status::ok();
  return ctx.fail(std::string(what) + " must be " + shape_string(want) + ", is " + shape_string(got));
}

// The sequence lengths as i32 on the device, or nothing when every sequence is whole (absent, or
// known at load and all equal to the number of steps).
Result<std::optional<Arg>> sequence_lengths(OpContext& ctx, const Dims& d) {
  if (!ctx.has_input(kLengths)) return std::optional<Arg>{};
  const ElemType type = ctx.input(kLengths).type;
  if (type != ElemType::kInt32 && type != ElemType::kInt64) {
    return ctx.fail(std::string("sequence_lens is ") + elem_type_name(type) + "; lengths are int32");
  }
  if (ctx.input(kLengths).shape != Shape{d.batch}) {
    return ctx.fail("sequence_lens must be [" + std::to_string(d.batch) + "], is " +
                    shape_string(ctx.input(kLengths).shape));
  }
  if (ctx.input(kLengths).is_host()) {
    RECON_ASSIGN_OR_RETURN(const std::vector<int64_t> lengths, ctx.host_ints(kLengths));
    bool whole = true;
    for (int64_t len : lengths) {
      if (len < 0 || len > d.steps) {
        return ctx.fail("a sequence length of " + std::to_string(len) + " outside [0, " + std::to_string(d.steps) +
                        "]");
      }
      whole = whole && len == d.steps;
    }
    if (whole) return std::optional<Arg>{};
  }
  RECON_ASSIGN_OR_RETURN(Arg lengths, ctx.device_input(kLengths));
  return std::optional<Arg>{lengths};
}

// Rows [lo, hi) of B viewed [D, 2, G, H] (Wb, then Rb), copied out as a flat vector: the GEMMs
// take their bias from its start.
Result<Arg> bias_part(OpContext& ctx, const Arg& b, const Dims& d, std::vector<gpu::ops::SliceAxis> axes) {
  RECON_ASSIGN_OR_RETURN(Arg view, gpu::ops::reshape_view(b, {d.dirs, 2, d.gates, d.hidden}));
  Shape shape;
  for (size_t i = 0; i < 4; ++i) shape.push_back(i < axes.size() ? axes[i].stop - axes[i].start : view.shape()[i]);
  RECON_ASSIGN_OR_RETURN(Arg part, ctx.scratch(b.dtype(), shape));
  RECON_RETURN_IF_ERROR(gpu::ops::slice(ctx.graph(), view, part, axes));
  return gpu::ops::reshape_view(part, {part.numel()});
}

// Block 0 of a state [2, D, N, H] from the initial state input (layout 0 [D, N, H], layout 1
// [N, D, H]), or zeros.
Status initial_state(OpContext& ctx, size_t input, const Arg& state, const Dims& d) {
  RECON_ASSIGN_OR_RETURN(Arg first, gpu::ops::row_view(state, 0, 1));
  RECON_ASSIGN_OR_RETURN(first, gpu::ops::reshape_view(first, {d.dirs, d.batch, d.hidden}));
  if (!ctx.has_input(input)) return gpu::ops::fill(ctx.graph(), first, 0.0f);
  RECON_ASSIGN_OR_RETURN(const Arg init, ctx.float_input(input));
  const Shape want = d.batch_first ? Shape{d.batch, d.dirs, d.hidden} : Shape{d.dirs, d.batch, d.hidden};
  RECON_RETURN_IF_ERROR(expect_shape(ctx, input == kInitialH ? "initial_h" : "initial_c", init.shape(), want));
  if (d.batch_first) return gpu::ops::permute(ctx.graph(), init, first, {1, 0, 2});
  return gpu::ops::slice(ctx.graph(), init, first, {});  // a whole copy of any size (ops::copy moves words)
}

// Output `i` (Y_h or Y_c) from block `block` of a state [2, D, N, H].
Status final_state(OpContext& ctx, size_t i, const Arg& state, int64_t block, const Dims& d) {
  const Shape out_shape = d.batch_first ? Shape{d.batch, d.dirs, d.hidden} : Shape{d.dirs, d.batch, d.hidden};
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(i, ctx.input(kX).type, out_shape));
  const std::vector<gpu::ops::SliceAxis> axes{{block, block + 1, 1}};
  if (!d.batch_first) {
    RECON_ASSIGN_OR_RETURN(Arg view, gpu::ops::reshape_view(out, {1, d.dirs, d.batch, d.hidden}));
    return gpu::ops::slice(ctx.graph(), state, view, axes);
  }
  RECON_ASSIGN_OR_RETURN(Arg last, ctx.scratch(state.dtype(), {1, d.dirs, d.batch, d.hidden}));
  RECON_RETURN_IF_ERROR(gpu::ops::slice(ctx.graph(), state, last, axes));
  RECON_ASSIGN_OR_RETURN(last, gpu::ops::reshape_view(last, {d.dirs, d.batch, d.hidden}));
  return gpu::ops::permute(ctx.graph(), last, out, {1, 0, 2});
}

// What every step of a layer reads and writes.
struct Layer {
  Family family = Family::kRnn;
  std::string direction;
  Dims d;
  bool reset_first = false;  // GRU without linear_before_reset
  std::vector<std::string> activations;
  std::optional<Arg> b, peepholes, lengths, y;
  Arg r, gx, gr, hidden, cell;
};

// Every step's input gates, all directions at once: X·Wᵀ + Wb, [steps·N rows in X's order, D·G·H].
Result<Arg> input_gates(OpContext& ctx, const Arg& x, const Arg& w, const std::optional<Arg>& b, const Dims& d) {
  const int64_t row = d.dirs * d.gates * d.hidden;
  RECON_ASSIGN_OR_RETURN(Arg gx, ctx.scratch(x.dtype(), {d.steps * d.batch, row}));
  gpu::ops::MatmulOptions o;
  o.transpose_b = true;
  o.path = ctx.gemm_path();
  if (b) {
    RECON_ASSIGN_OR_RETURN(o.bias, bias_part(ctx, *b, d, {{0, d.dirs, 1}, {0, 1, 1}}));
  }
  RECON_ASSIGN_OR_RETURN(const Arg x2, gpu::ops::reshape_view(x, {d.steps * d.batch, d.input}));
  RECON_ASSIGN_OR_RETURN(const Arg w2, gpu::ops::reshape_view(w, {row, d.input}));
  RECON_RETURN_IF_ERROR(gpu::ops::matmul(ctx.graph(), ctx.caps(), x2, w2, gx, o));
  return gx;
}

// Every step of direction `dir`: step s reads state block s % 2 and writes the other.
Status run_direction(OpContext& ctx, const Layer& l, int64_t dir) {
  const Dims& d = l.d;
  const int64_t gh = d.gates * d.hidden, row = d.dirs * gh;
  const int64_t block = d.dirs * d.batch * d.hidden, nh = d.batch * d.hidden;
  const bool forward = l.direction == "forward" || (l.direction == "bidirectional" && dir == 0);
  gpu::ops::RnnStep step;
  step.cell = l.family == Family::kRnn ? RnnCell::kRnn : l.family == Family::kLstm ? RnnCell::kLstm : RnnCell::kGru;
  step.batch = d.batch;
  step.size = d.hidden;
  step.activations = activations_for(l.activations, l.family, dir);
  step.gx_stride = d.batch_first ? d.steps * row : row;
  step.y_stride = d.batch_first ? d.steps * d.dirs * d.hidden : d.hidden;
  step.peephole_offset = dir * 3 * d.hidden;
  std::optional<Arg> rb, rbh;  // this direction's Rb, and Rbh alone for the second GRU GEMM
  if (l.b) {
    RECON_ASSIGN_OR_RETURN(rb, bias_part(ctx, *l.b, d, {{dir, dir + 1, 1}, {1, 2, 1}}));
    if (l.reset_first) {
      RECON_ASSIGN_OR_RETURN(rbh, bias_part(ctx, *l.b, d, {{dir, dir + 1, 1}, {1, 2, 1}, {2, 3, 1}}));
    }
  }
  Graph& g = ctx.graph();
  for (int64_t s = 0; s < d.steps; ++s) {
    const int64_t t = forward ? s : d.steps - 1 - s;
    step.step = t;
    step.prev = (s % 2) * block + dir * nh;
    step.cur = ((s + 1) % 2) * block + dir * nh;
    step.gx_offset = (d.batch_first ? t * row : t * d.batch * row) + dir * gh;
    step.y_offset = d.batch_first ? (t * d.dirs + dir) * d.hidden : (t * d.dirs + dir) * nh;
    // gr = H·Rᵀ + Rb (only the z and r gates where r multiplies H first).
    gpu::ops::MatmulGeometry geo{.m = d.batch,
                                 .n = l.reset_first ? 2 * d.hidden : gh,
                                 .k = d.hidden,
                                 .lda = d.hidden,
                                 .ldb = d.hidden,
                                 .ldc = gh,
                                 .offset_a = step.prev,
                                 .offset_b = dir * gh * d.hidden};
    gpu::ops::MatmulOptions o;
    o.transpose_b = true;
    o.path = ctx.gemm_path();
    o.bias = rb;
    RECON_RETURN_IF_ERROR(gpu::ops::matmul_strided(g, ctx.caps(), l.hidden, l.r, l.gr, geo, o));
    if (l.reset_first) {
      step.cell = RnnCell::kGruReset;
      RECON_RETURN_IF_ERROR(gpu::ops::rnn_cell(g, step, l.gx, l.gr, l.hidden, l.cell, l.peepholes, l.lengths, l.y));
      // gr's h columns = (r ⊙ H)·Rhᵀ + Rbh, r ⊙ H being in the cell buffer's current block.
      geo.n = d.hidden;
      geo.offset_a = step.cur;
      geo.offset_b += 2 * d.hidden * d.hidden;
      geo.offset_c = 2 * d.hidden;
      o.bias = rbh;
      RECON_RETURN_IF_ERROR(gpu::ops::matmul_strided(g, ctx.caps(), l.cell, l.r, l.gr, geo, o));
      step.cell = RnnCell::kGruHidden;
    }
    RECON_RETURN_IF_ERROR(gpu::ops::rnn_cell(g, step, l.gx, l.gr, l.hidden, l.cell, l.peepholes, l.lengths, l.y));
  }
  return Status::ok();
}

}  // namespace

Status recurrent(OpContext& ctx) {
  const Family family = family_of(ctx.node().op_type);
  const std::string direction = ctx.attr_string("direction", "forward");
  Dims d;
  d.dirs = direction_count(direction);
  d.gates = gate_count(family);
  d.batch_first = ctx.attr_int("layout", 0) == 1;
  RECON_ASSIGN_OR_RETURN(const Arg x, ctx.float_input(kX));
  RECON_ASSIGN_OR_RETURN(const Arg w, ctx.float_input(kW));
  RECON_ASSIGN_OR_RETURN(const Arg r, ctx.float_input(kR));
  if (x.shape().size() != 3) return ctx.fail("X must be 3-D, is " + shape_string(x.shape()));
  d.steps = x.shape()[d.batch_first ? 1 : 0];
  d.batch = x.shape()[d.batch_first ? 0 : 1];
  d.input = x.shape()[2];
  if (w.shape().size() != 3 || w.shape()[1] % d.gates != 0) return ctx.fail("W is " + shape_string(w.shape()));
  d.hidden = ctx.attr_int("hidden_size", w.shape()[1] / d.gates);
  const int64_t gh = d.gates * d.hidden;
  RECON_RETURN_IF_ERROR(expect_shape(ctx, "W", w.shape(), {d.dirs, gh, d.input}));
  RECON_RETURN_IF_ERROR(expect_shape(ctx, "R", r.shape(), {d.dirs, gh, d.hidden}));
  if (d.steps < 1 || d.batch < 1 || d.hidden < 1) return ctx.fail("an empty sequence, batch or hidden state");
  RECON_ASSIGN_OR_RETURN(const std::optional<Arg> lengths, sequence_lengths(ctx, d));
  std::optional<Arg> b, peepholes, y;
  if (ctx.has_input(kB)) {
    RECON_ASSIGN_OR_RETURN(b, ctx.float_input(kB));
    RECON_RETURN_IF_ERROR(expect_shape(ctx, "B", b->shape(), {d.dirs, 2 * gh}));
  }
  if (family == Family::kLstm && ctx.has_input(kPeepholes)) {
    RECON_ASSIGN_OR_RETURN(peepholes, ctx.float_input(kPeepholes));
    RECON_RETURN_IF_ERROR(expect_shape(ctx, "P", peepholes->shape(), {d.dirs, 3 * d.hidden}));
  }
  const bool reset_first = family == Family::kGru && ctx.attr_int("linear_before_reset", 0) == 0;
  RECON_ASSIGN_OR_RETURN(const Arg gx, input_gates(ctx, x, w, b, d));
  RECON_ASSIGN_OR_RETURN(const Arg gr, ctx.scratch(x.dtype(), {d.batch, gh}));

  // The state: two blocks [D, N, H] (previous and current step) of H, and of C for LSTM; GRU
  // without linear_before_reset keeps r ⊙ H in the C buffer. RNN binds H in its place.
  RECON_ASSIGN_OR_RETURN(const Arg hidden, ctx.scratch(x.dtype(), {2, d.dirs, d.batch, d.hidden}));
  Arg cell = hidden;
  if (family == Family::kLstm || reset_first) {
    RECON_ASSIGN_OR_RETURN(cell, ctx.scratch(x.dtype(), {2, d.dirs, d.batch, d.hidden}));
  }
  RECON_RETURN_IF_ERROR(initial_state(ctx, kInitialH, hidden, d));
  if (family == Family::kLstm) RECON_RETURN_IF_ERROR(initial_state(ctx, kInitialC, cell, d));
  if (ctx.wants_output(0)) {
    const Shape shape =
        d.batch_first ? Shape{d.batch, d.steps, d.dirs, d.hidden} : Shape{d.steps, d.dirs, d.batch, d.hidden};
    RECON_ASSIGN_OR_RETURN(y, ctx.new_output(0, ctx.input(kX).type, shape));
  }
  const Layer layer{.family = family,
                    .direction = direction,
                    .d = d,
                    .reset_first = reset_first,
                    .activations = activations_of(ctx.node(), family),
                    .b = b,
                    .peepholes = peepholes,
                    .lengths = lengths,
                    .y = y,
                    .r = r,
                    .gx = gx,
                    .gr = gr,
                    .hidden = hidden,
                    .cell = cell};
  for (int64_t dir = 0; dir < d.dirs; ++dir) RECON_RETURN_IF_ERROR(run_direction(ctx, layer, dir));
  const int64_t last = d.steps % 2;  // the block the last step wrote
  if (ctx.wants_output(1)) RECON_RETURN_IF_ERROR(final_state(ctx, 1, hidden, last, d));
  if (family == Family::kLstm && ctx.wants_output(2)) RECON_RETURN_IF_ERROR(final_state(ctx, 2, cell, last, d));
  return Status::ok();
}

}  // namespace recon::gpu::onnx::ops_builders
