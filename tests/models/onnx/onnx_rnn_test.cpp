// ONNX's recurrent layers end to end against a loop transcription of their ONNX definitions in
// double: RNN, GRU (linear_before_reset 0 and 1) and LSTM (peepholes), forward, reverse and
// bidirectional, layout 0 and 1, with and without B and initial states, per-direction activations,
// sequence lengths that end some rows early, and an absent Y; fp32 tightly, fp16 storage loosely
// (its rounding of the carried state compounds over the steps); the refusals, each naming the op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_engine.h"
#include "gpu/models/onnx/onnx_host.h"
#include "tests/models/onnx/onnx_engine_test_util.h"

namespace recon::gpu::onnx {
namespace {

struct Case {
  std::string op;  // RNN, GRU, LSTM
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t linear_before_reset = 0;
  bool bias = true, initial = true, peepholes = false, want_y = true;
  std::vector<std::string> activations;  // empty: the op's defaults
  std::vector<int64_t> lengths;          // empty: none
  int64_t steps = 5, batch = 3, input = 4, hidden = 6;

  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
  std::string label() const {
    return op + " " + direction + " layout " + std::to_string(layout) +
           (op == "GRU" ? " lbr " + std::to_string(linear_before_reset) : "") +
           (lengths.empty() ? "" : " with lengths");
  }
};

// Deterministic values in [−scale, scale].
std::vector<double> wave(int64_t n, double seed, double scale) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = scale * std::sin(0.61 * static_cast<double>(k) + seed);
  return v;
}

double activate(const std::string& name, double x) {
  if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  return std::max(x, 0.0);  // Relu
}

struct Data {
  std::vector<double> x, w, r, b, h0, c0, p;  // x, h0 and c0 in the case's layout
};

struct Want {
  std::vector<double> y, y_h, y_c;  // in the case's layout
};

// The ONNX definitions, step by step in double (state [D][N][H], inputs read in either layout).
Want reference(const Case& c, const Data& in) {
  const int64_t T = c.steps, N = c.batch, I = c.input, H = c.hidden, D = c.dirs(), G = c.gates();
  std::vector<std::string> acts = c.activations;
  if (acts.empty())
    acts = c.op == "RNN"   ? std::vector<std::string>{"Tanh"}
           : c.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                           : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const size_t per = c.op == "RNN" ? 1 : c.op == "GRU" ? 2 : 3;
  const auto xv = [&](int64_t t, int64_t n, int64_t i) {
    return in.x[static_cast<size_t>((c.layout == 0 ? t * N + n : n * T + t) * I + i)];
  };
  const auto state_at = [&](int64_t d, int64_t n) {
    return static_cast<size_t>(c.layout == 0 ? d * N + n : n * D + d);
  };
  Want out;
  out.y.assign(static_cast<size_t>(T * D * N * H), 0.0);
  out.y_h.assign(static_cast<size_t>(D * N * H), 0.0);
  out.y_c = out.y_h;
  for (int64_t d = 0; d < D; ++d) {
    const std::string f = acts[(acts.size() > per ? d * per : 0) + 0];
    const std::string g = per > 1 ? acts[(acts.size() > per ? d * per : 0) + 1] : "";
    const std::string h = per > 2 ? acts[(acts.size() > per ? d * per : 0) + 2] : "";
    const bool forward = c.direction == "forward" || (c.direction == "bidirectional" && d == 0);
    const auto W = [&](int64_t row, int64_t i) { return in.w[static_cast<size_t>((d * G * H + row) * I + i)]; };
    const auto R = [&](int64_t row, int64_t m) { return in.r[static_cast<size_t>((d * G * H + row) * H + m)]; };
    const auto Wb = [&](int64_t row) { return c.bias ? in.b[static_cast<size_t>(d * 2 * G * H + row)] : 0.0; };
    const auto Rb = [&](int64_t row) { return c.bias ? in.b[static_cast<size_t>(d * 2 * G * H + G * H + row)] : 0.0; };
    const auto P = [&](int64_t k, int64_t j) {
      return c.peepholes ? in.p[static_cast<size_t>(d * 3 * H + k * H + j)] : 0.0;
    };
    for (int64_t n = 0; n < N; ++n) {
      std::vector<double> hs(static_cast<size_t>(H), 0.0), cs = hs;
      for (int64_t j = 0; j < H; ++j) {
        if (c.initial)
          hs[static_cast<size_t>(j)] = in.h0[state_at(d, n) * static_cast<size_t>(H) + static_cast<size_t>(j)];
        if (c.initial && c.op == "LSTM")
          cs[static_cast<size_t>(j)] = in.c0[state_at(d, n) * static_cast<size_t>(H) + static_cast<size_t>(j)];
      }
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = forward ? s : T - 1 - s;
        if (!c.lengths.empty() && t >= c.lengths[static_cast<size_t>(n)]) continue;  // Y stays 0
        // gx[k·H + j] = x·Wᵀ + Wb, gr = h·Rᵀ + Rb.
        std::vector<double> gx(static_cast<size_t>(G * H)), gr(gx.size());
        for (int64_t row = 0; row < G * H; ++row) {
          double a = Wb(row), b = Rb(row);
          for (int64_t i = 0; i < I; ++i) a += xv(t, n, i) * W(row, i);
          for (int64_t m = 0; m < H; ++m) b += hs[static_cast<size_t>(m)] * R(row, m);
          gx[static_cast<size_t>(row)] = a;
          gr[static_cast<size_t>(row)] = b;
        }
        std::vector<double> next(static_cast<size_t>(H)), next_c = cs;
        const auto at = [&](int64_t k, int64_t j) { return static_cast<size_t>(k * H + j); };
        if (c.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) next[static_cast<size_t>(j)] = activate(f, gx[at(0, j)] + gr[at(0, j)]);
        } else if (c.op == "GRU") {
          std::vector<double> z(static_cast<size_t>(H)), r(z.size());
          for (int64_t j = 0; j < H; ++j) {
            z[static_cast<size_t>(j)] = activate(f, gx[at(0, j)] + gr[at(0, j)]);
            r[static_cast<size_t>(j)] = activate(f, gx[at(1, j)] + gr[at(1, j)]);
          }
          for (int64_t j = 0; j < H; ++j) {
            double pre = gx[at(2, j)];
            if (c.linear_before_reset != 0) {
              pre += r[static_cast<size_t>(j)] * gr[at(2, j)];
            } else {
              pre += Rb(2 * H + j);
              for (int64_t m = 0; m < H; ++m)
                pre += r[static_cast<size_t>(m)] * hs[static_cast<size_t>(m)] * R(2 * H + j, m);
            }
            const double zj = z[static_cast<size_t>(j)];
            next[static_cast<size_t>(j)] = (1.0 - zj) * activate(g, pre) + zj * hs[static_cast<size_t>(j)];
          }
        } else {
          for (int64_t j = 0; j < H; ++j) {
            const double cp = cs[static_cast<size_t>(j)];
            const double ig = activate(f, gx[at(0, j)] + gr[at(0, j)] + P(0, j) * cp);
            const double fg = activate(f, gx[at(2, j)] + gr[at(2, j)] + P(2, j) * cp);
            const double cg = activate(g, gx[at(3, j)] + gr[at(3, j)]);
            const double cn = fg * cp + ig * cg;
            const double og = activate(f, gx[at(1, j)] + gr[at(1, j)] + P(1, j) * cn);
            next_c[static_cast<size_t>(j)] = cn;
            next[static_cast<size_t>(j)] = og * activate(h, cn);
          }
        }
        hs = next;
        cs = next_c;
        for (int64_t j = 0; j < H; ++j) {
          const int64_t yi = c.layout == 0 ? ((t * D + d) * N + n) * H + j : ((n * T + t) * D + d) * H + j;
          out.y[static_cast<size_t>(yi)] = hs[static_cast<size_t>(j)];
        }
      }
      for (int64_t j = 0; j < H; ++j) {
        out.y_h[state_at(d, n) * static_cast<size_t>(H) + static_cast<size_t>(j)] = hs[static_cast<size_t>(j)];
        out.y_c[state_at(d, n) * static_cast<size_t>(H) + static_cast<size_t>(j)] = cs[static_cast<size_t>(j)];
      }
    }
  }
  return out;
}

Attribute strings_attribute(std::string name, std::vector<std::string> values) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::kStrings;
  a.strings = std::move(values);
  return a;
}

HostTensor floats(std::string name, std::vector<int64_t> dims, const std::vector<double>& v) {
  HostTensor t = make_tensor(ElemType::kFloat, std::move(dims), v).value();
  t.name = std::move(name);
  return t;
}

// The node with W, R, B, the lengths and P as initializers; X and the initial states as inputs.
Model model_for(const Case& c, const Data& in) {
  const int64_t T = c.steps, N = c.batch, I = c.input, H = c.hidden, D = c.dirs(), G = c.gates();
  const bool lstm = c.op == "LSTM";
  std::vector<std::string> ins{
      "x", "w", "r", c.bias ? "b" : "", c.lengths.empty() ? "" : "lens", c.initial ? "h0" : ""};
  if (lstm) {
    ins.push_back(c.initial ? "c0" : "");
    ins.push_back(c.peepholes ? "p" : "");
  }
  while (ins.back().empty()) ins.pop_back();
  std::vector<std::string> outs{c.want_y ? "y" : "", "y_h"};
  if (lstm) outs.push_back("y_c");
  Node n = node(c.op, ins, outs, "rec");
  n.attributes.push_back(int_attribute("hidden_size", H));
  n.attributes.push_back(string_attribute("direction", c.direction));
  if (c.layout != 0) n.attributes.push_back(int_attribute("layout", c.layout));
  if (c.op == "GRU") n.attributes.push_back(int_attribute("linear_before_reset", c.linear_before_reset));
  if (!c.activations.empty()) n.attributes.push_back(strings_attribute("activations", c.activations));
  const std::vector<int64_t> x_dims = c.layout == 0 ? std::vector<int64_t>{T, N, I} : std::vector<int64_t>{N, T, I};
  const std::vector<int64_t> s_dims = c.layout == 0 ? std::vector<int64_t>{D, N, H} : std::vector<int64_t>{N, D, H};
  std::vector<ValueInfo> inputs{info("x", ElemType::kFloat, x_dims)};
  if (c.initial) inputs.push_back(info("h0", ElemType::kFloat, s_dims));
  if (c.initial && lstm) inputs.push_back(info("c0", ElemType::kFloat, s_dims));
  std::vector<ValueInfo> outputs;
  if (c.want_y) {
    outputs.push_back(info("y", ElemType::kFloat,
                           c.layout == 0 ? std::vector<int64_t>{T, D, N, H} : std::vector<int64_t>{N, T, D, H}));
  }
  outputs.push_back(info("y_h", ElemType::kFloat, s_dims));
  if (lstm) outputs.push_back(info("y_c", ElemType::kFloat, s_dims));
  Model m = model_of({n}, inputs, outputs);
  m.opsets[""] = 14;
  m.graph.initializers.push_back(floats("w", {D, G * H, I}, in.w));
  m.graph.initializers.push_back(floats("r", {D, G * H, H}, in.r));
  if (c.bias) m.graph.initializers.push_back(floats("b", {D, 2 * G * H}, in.b));
  if (c.peepholes) m.graph.initializers.push_back(floats("p", {D, 3 * H}, in.p));
  if (!c.lengths.empty()) {
    std::vector<double> lens(c.lengths.begin(), c.lengths.end());
    HostTensor t = make_tensor(ElemType::kInt32, {N}, lens).value();
    t.name = "lens";
    m.graph.initializers.push_back(std::move(t));
  }
  return m;
}

// Largest error relative to max(1, |want|).
double worst(const HostTensor& got, const std::vector<double>& want) {
  const auto g = got.values<float>();
  EXPECT_EQ(g.size(), want.size());
  double e = 0.0;
  for (size_t i = 0; i < std::min(g.size(), want.size()); ++i) {
    e = std::max(e, std::abs(g[i] - want[i]) / std::max(1.0, std::abs(want[i])));
  }
  return e;
}

class OnnxRnnTest : public OnnxEngineTest {
 protected:
  void check(const Case& c) {
    const int64_t D = c.dirs(), G = c.gates(), H = c.hidden;
    Data in;
    in.x = wave(c.steps * c.batch * c.input, 0.3, 1.0);
    in.w = wave(D * G * H * c.input, 1.1, 0.6);
    in.r = wave(D * G * H * H, 2.3, 0.4);
    in.b = wave(D * 2 * G * H, 0.7, 0.3);
    in.h0 = wave(D * c.batch * H, 1.9, 0.5);
    in.c0 = wave(D * c.batch * H, 2.9, 0.5);
    in.p = wave(D * 3 * H, 3.7, 0.5);
    const Want want = reference(c, in);
    const Model m = model_for(c, in);
    std::vector<HostTensor> inputs{floats("",
                                          c.layout == 0 ? std::vector<int64_t>{c.steps, c.batch, c.input}
                                                        : std::vector<int64_t>{c.batch, c.steps, c.input},
                                          in.x)};
    const std::vector<int64_t> s_dims =
        c.layout == 0 ? std::vector<int64_t>{D, c.batch, H} : std::vector<int64_t>{c.batch, D, H};
    if (c.initial) inputs.push_back(floats("", s_dims, in.h0));
    if (c.initial && c.op == "LSTM") inputs.push_back(floats("", s_dims, in.c0));
    for (const DType precision : {DType::kF32, DType::kF16}) {
      Result<std::vector<HostTensor>> out = run_model(m, precision, inputs);
      ASSERT_TRUE(out.is_ok()) << c.label() << ": " << out.status().to_string();
      // fp32: the GEMMs' and activations' roundings (measured ≤ 4.9e-7 on lavapipe); fp16: every
      // stored value rounded, the state too (≤ 1.2e-3).
      const double tol = precision == DType::kF32 ? 1e-6 : 2e-3;
      const std::string what = c.label() + " " + dtype_name(precision);
      size_t k = 0;
      double e = 0.0;
      if (c.want_y) {
        e = std::max(e, worst((*out)[k++], want.y));
      }
      e = std::max(e, worst((*out)[k++], want.y_h));
      if (c.op == "LSTM") {
        e = std::max(e, worst((*out)[k++], want.y_c));
      }
      EXPECT_LE(e, tol) << what;
      std::printf("%s: worst error %.2e\n", what.c_str(), e);
    }
  }
};

TEST_F(OnnxRnnTest, RnnMatchesItsDefinition) {
  check(Case{.op = "RNN"});
  check(Case{.op = "RNN", .direction = "reverse", .bias = false, .activations = {"Relu"}});
  check(Case{.op = "RNN", .direction = "bidirectional", .layout = 1, .initial = false});
}

TEST_F(OnnxRnnTest, GruMatchesItsDefinitionWithAndWithoutLinearBeforeReset) {
  check(Case{.op = "GRU"});
  check(Case{.op = "GRU", .linear_before_reset = 1});
  check(Case{.op = "GRU", .direction = "bidirectional", .layout = 1});
  check(Case{.op = "GRU", .direction = "reverse", .linear_before_reset = 1, .bias = false, .initial = false});
  check(Case{.op = "GRU", .batch = 5, .hidden = 70});  // 350 units: more than one workgroup
}

TEST_F(OnnxRnnTest, LstmMatchesItsDefinitionWithPeepholes) {
  check(Case{.op = "LSTM", .peepholes = true});
  check(Case{.op = "LSTM", .direction = "reverse", .bias = false, .initial = false});
  check(Case{.op = "LSTM", .batch = 1, .hidden = 5});  // initial states of 5 elements: 10 bytes in fp16
  check(Case{.op = "LSTM",
             .direction = "bidirectional",
             .layout = 1,
             .peepholes = true,
             .activations = {"Sigmoid", "Tanh", "Tanh", "Sigmoid", "Relu", "Tanh"}});
}

// Rows whose sequence ends early write zeros past it and keep their last valid state (a reverse
// pass starts at the length's end), in both layouts; Y absent.
TEST_F(OnnxRnnTest, SequenceLengthsEndRowsEarly) {
  check(Case{.op = "GRU", .direction = "bidirectional", .lengths = {5, 3, 1}});
  check(Case{.op = "LSTM", .direction = "bidirectional", .layout = 1, .peepholes = true, .lengths = {2, 5, 0}});
  check(Case{.op = "RNN", .direction = "reverse", .want_y = false, .lengths = {4, 5, 2}});
  check(Case{.op = "LSTM", .want_y = false});
}

TEST_F(OnnxRnnTest, RefusesWhatItDoesNotRunByName) {
  struct Refusal {
    std::string op;
    Attribute attr;
    std::string names;
  };
  Attribute clip;
  clip.name = "clip";
  clip.kind = Attribute::Kind::kFloat;
  clip.f = 3.0f;
  for (const Refusal& r :
       {Refusal{"LSTM", clip, "clip"}, Refusal{"LSTM", int_attribute("input_forget", 1), "input_forget = 1"},
        Refusal{"GRU", strings_attribute("activations", {"HardSigmoid", "Tanh"}), "activation 'HardSigmoid'"},
        Refusal{"RNN", strings_attribute("activations", {"Tanh", "Tanh", "Tanh"}), "3 activations"},
        Refusal{"RNN", string_attribute("direction", "sideways"), "direction 'sideways'"}}) {
    Case c{.op = r.op};
    Data in;
    in.w = wave(c.gates() * c.hidden * c.input, 1.0, 0.5);
    in.r = wave(c.gates() * c.hidden * c.hidden, 2.0, 0.5);
    in.b = wave(2 * c.gates() * c.hidden, 3.0, 0.5);
    Model m = model_for(c, in);
    std::vector<Attribute>& attrs = m.graph.nodes[0].attributes;
    std::erase_if(attrs, [&](const Attribute& a) { return a.name == r.attr.name; });
    attrs.push_back(r.attr);
    Result<std::unique_ptr<Engine>> load = Engine::from_model(rt(), m);
    ASSERT_FALSE(load.is_ok()) << r.names;
    EXPECT_NE(load.status().message().find(r.op + " 'rec'"), std::string::npos) << load.status().message();
    EXPECT_NE(load.status().message().find(r.names), std::string::npos) << load.status().message();
  }
}

}  // namespace
}  // namespace recon::gpu::onnx
