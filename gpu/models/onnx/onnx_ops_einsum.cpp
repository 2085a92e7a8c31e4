// ONNX Einsum of one or two float operands where it is a transpose and a batched MatMul: labels of
// both inputs kept in the output are the batch, labels of both summed over the contraction, labels
// of one input kept are its rows or columns, and labels of one input summed over are reduced away
// before the product. Ellipses, a label repeated within one input (diagonals) and more than two
// inputs are refused by name.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/matmul.h"
#include "gpu/ops/reduce.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

struct EinsumTerms {
  std::vector<std::string> inputs;
  std::string output;
};

// "ij,jk->ik" split into its terms, spaces dropped; without "->" the output is every label that
// appears once, in alphabetical order (the implicit form).
Result<EinsumTerms> parse_einsum(const std::string& equation) {
  std::string eq;
  for (char ch : equation) {
    if (ch != ' ') eq.push_back(ch);
  }
  if (eq.find("...") != std::string::npos) return invalid_argument("an ellipsis ('...') in '" + equation + "'");
  EinsumTerms t;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  for (size_t begin = 0;;) {
    const size_t comma = lhs.find(',', begin);
    t.inputs.push_back(lhs.substr(begin, comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  for (const std::string& term : t.inputs) {
    for (size_t i = 0; i < term.size(); ++i) {
      if (!std::isalpha(static_cast<unsigned char>(term[i]))) {
        return invalid_argument("label '" + std::string(1, term[i]) + "' in '" + equation + "'");
      }
      if (term.find(term[i], i + 1) != std::string::npos) {
        return invalid_argument("label '" + std::string(1, term[i]) + "' repeated within '" + term +
                                "' (a diagonal) in '" + equation + "'");
      }
    }
  }
  if (arrow != std::string::npos) {
    t.output = eq.substr(arrow + 2);
  } else {
    for (char ch = 'A'; ch <= 'z'; ++ch) {
      size_t count = 0;
      for (const std::string& term : t.inputs) count += static_cast<size_t>(std::count(term.begin(), term.end(), ch));
      if (count == 1) t.output.push_back(ch);
    }
  }
  for (size_t i = 0; i < t.output.size(); ++i) {
    bool known = false;
    for (const std::string& term : t.inputs) known = known || term.find(t.output[i]) != std::string::npos;
    if (!known || t.output.find(t.output[i], i + 1) != std::string::npos) {
      return invalid_argument("output label '" + std::string(1, t.output[i]) + "' in '" + equation + "'");
    }
  }
  return t;
}

bool has_label(const std::string& s, char l) {
  return s.find(l) != std::string::npos;
}

// The permutation that takes axes labelled `from` into the order `to` (the same set of labels).
std::vector<int> einsum_permutation(const std::string& from, const std::string& to) {
  std::vector<int> perm;
  for (char l : to) perm.push_back(static_cast<int>(from.find(l)));
  return perm;
}

// `x` with labels `from` permuted into the order `to`, through scratch where the order changes.
Result<Arg> einsum_permuted(OpContext& ctx, const Arg& x, const std::string& from, const std::string& to) {
  if (from == to) return x;
  const std::vector<int> perm = einsum_permutation(from, to);
  Shape shape;
  for (int d : perm) shape.push_back(x.shape()[static_cast<size_t>(d)]);
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.scratch(x.dtype(), shape));
  RECON_RETURN_IF_ERROR(gpu::ops::permute(ctx.graph(), x, out, perm));
  return out;
}

// Sums `x` (labels `labels`) over every label not in `keep`; returns the rest and their labels.
Result<std::pair<Arg, std::string>> einsum_summed(OpContext& ctx, const Arg& x, const std::string& labels,
                                                  const std::string& keep) {
  Arg cur = x;
  std::string cur_labels = labels;
  for (size_t d = cur_labels.size(); d-- > 0;) {
    if (has_label(keep, cur_labels[d])) continue;
    Shape shape = cur.shape();
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
    RECON_ASSIGN_OR_RETURN(Arg next, ctx.scratch(x.dtype(), shape));
    RECON_RETURN_IF_ERROR(gpu::ops::reduce_sum(ctx.graph(), cur, next, static_cast<int>(d)));
    cur = next;
    cur_labels.erase(d, 1);
  }
  return std::pair{cur, cur_labels};
}

}  // namespace

std::string check_einsum(const Node& node, int64_t) {
  const Attribute* eq = node.attribute("equation");
  if (eq == nullptr) return "Einsum without an equation";
  Result<EinsumTerms> t = parse_einsum(eq->s);
  if (!t) return "Einsum: " + t.status().message();
  if (t->inputs.size() > 2) return "Einsum of " + std::to_string(t->inputs.size()) + " inputs (one or two)";
  if (t->inputs.size() != node.inputs.size()) return "Einsum's equation and inputs disagree in number";
  return {};
}

Status einsum(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(EinsumTerms t, parse_einsum(ctx.attr_string("equation", "")));
  std::vector<Arg> in;
  std::string all;
  std::vector<std::pair<char, int64_t>> sizes;
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    RECON_ASSIGN_OR_RETURN(Arg x, ctx.float_input(i));
    if (x.shape().size() != t.inputs[i].size()) {
      return ctx.fail("input " + std::to_string(i) + " " + shape_string(x.shape()) + " has " +
                      std::to_string(x.shape().size()) + " axes, its term '" + t.inputs[i] + "' names " +
                      std::to_string(t.inputs[i].size()));
    }
    for (size_t d = 0; d < t.inputs[i].size(); ++d) {
      const char l = t.inputs[i][d];
      const auto it = std::find_if(sizes.begin(), sizes.end(), [&](const auto& s) { return s.first == l; });
      if (it == sizes.end()) {
        sizes.emplace_back(l, x.shape()[d]);
      } else if (it->second != x.shape()[d]) {
        return ctx.fail(std::string("label '") + l + "' is " + std::to_string(it->second) + " and " +
                        std::to_string(x.shape()[d]) + " (recon does not broadcast Einsum's operands)");
      }
    }
    in.push_back(x);
  }
  const auto size_of = [&](char l) {
    return std::find_if(sizes.begin(), sizes.end(), [&](const auto& s) { return s.first == l; })->second;
  };
  Shape out_shape;
  for (char l : t.output) out_shape.push_back(size_of(l));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, out_shape));
  if (in.size() == 1) {
    RECON_ASSIGN_OR_RETURN(auto summed, einsum_summed(ctx, in[0], t.inputs[0], t.output));
    if (summed.second == t.output && summed.first.shape() == out.shape()) {
      return gpu::ops::copy(ctx.graph(), summed.first, out);
    }
    return gpu::ops::permute(ctx.graph(), summed.first, out, einsum_permutation(summed.second, t.output));
  }
  // Labels of one input that the output drops are summed away first; then batch (both, kept), rows
  // (A only), columns (B only) and the contraction (both, dropped).
  const std::string &la = t.inputs[0], &lb = t.inputs[1];
  RECON_ASSIGN_OR_RETURN(auto a_summed, einsum_summed(ctx, in[0], la, lb + t.output));
  RECON_ASSIGN_OR_RETURN(auto b_summed, einsum_summed(ctx, in[1], lb, la + t.output));
  std::string batch, rows, cols, inner;
  for (char l : a_summed.second) {
    if (has_label(lb, l)) {
      (has_label(t.output, l) ? batch : inner).push_back(l);
    } else {
      rows.push_back(l);
    }
  }
  for (char l : b_summed.second) {
    if (!has_label(la, l)) cols.push_back(l);
  }
  const auto numel_of = [&](const std::string& ls) {
    int64_t n = 1;
    for (char l : ls) n *= size_of(l);
    return n;
  };
  const int64_t nb = numel_of(batch), m = numel_of(rows), n = numel_of(cols), k = numel_of(inner);
  RECON_ASSIGN_OR_RETURN(Arg a, einsum_permuted(ctx, a_summed.first, a_summed.second, batch + rows + inner));
  RECON_ASSIGN_OR_RETURN(Arg b, einsum_permuted(ctx, b_summed.first, b_summed.second, batch + inner + cols));
  RECON_ASSIGN_OR_RETURN(a, gpu::ops::reshape_view(a, nb == 1 ? Shape{m, k} : Shape{nb, m, k}));
  RECON_ASSIGN_OR_RETURN(b, gpu::ops::reshape_view(b, nb == 1 ? Shape{k, n} : Shape{nb, k, n}));
  const std::string product = batch + rows + cols;
  gpu::ops::MatmulOptions opt;
  opt.path = ctx.gemm_path();
  Arg c = out;
  if (product != t.output) {
    Shape shape;
    for (char l : product) shape.push_back(size_of(l));
    RECON_ASSIGN_OR_RETURN(c, ctx.scratch(out.dtype(), shape));
  }
  RECON_ASSIGN_OR_RETURN(Arg c3, gpu::ops::reshape_view(c, nb == 1 ? Shape{m, n} : Shape{nb, m, n}));
  RECON_RETURN_IF_ERROR(gpu::ops::matmul(ctx.graph(), ctx.caps(), a, b, c3, opt));
  if (product == t.output) return Status::ok();
  return gpu::ops::permute(ctx.graph(), c, out, einsum_permutation(product, t.output));
}

}  // namespace recon::gpu::onnx::ops_builders
