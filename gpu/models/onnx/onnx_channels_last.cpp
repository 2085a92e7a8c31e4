#include "gpu/models/onnx/onnx_channels_last.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpu/models/onnx/onnx_fusion.h"

namespace recon::gpu::onnx {
namespace {

enum class Kind : uint8_t { kNone, kConv, kPool, kElementwise };

// Element-wise ops whose first input is the only activation (Clip's bounds are scalars).
bool unary_elementwise(const std::string& op) {
  static const std::set<std::string> ops = {"Relu", "LeakyRelu", "Sigmoid", "Tanh",     "HardSigmoid", "HardSwish",
                                            "Elu",  "Selu",      "Celu",    "Softplus", "Softsign",    "Clip",
                                            "Erf",  "Exp",       "Neg",     "Abs",      "Sqrt",        "Identity"};
  return ops.count(op) != 0;
}

bool binary_elementwise(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
}

bool all_ones(const Attribute* a) {
  return a == nullptr || std::all_of(a->ints.begin(), a->ints.end(), [](int64_t v) { return v == 1; });
}

// Explicit pads the same on both sides of each axis, or none (VALID): what conv2d_nhwc takes.
bool symmetric_padding(const Node& n) {
  if (const Attribute* a = n.attribute("auto_pad"); a != nullptr && a->s != "NOTSET" && a->s != "VALID") return false;
  const Attribute* pads = n.attribute("pads");
  if (pads == nullptr) return true;
  const std::vector<int64_t>& p = pads->ints;
  return p.size() == 4 && p[0] == p[2] && p[1] == p[3];
}

}  // namespace

HostTensor ohwi_copy(const HostTensor& w, std::string name) {
  const int64_t o = w.dims[0], i = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  const size_t es = elem_type_size(w.type);
  std::vector<uint8_t> data(w.bytes.size());
  for (int64_t a = 0; a < o; ++a)
    for (int64_t c = 0; c < i; ++c)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x) {
          const size_t from = static_cast<size_t>(((a * i + c) * kh + y) * kw + x) * es;
          const size_t to = static_cast<size_t>(((a * kh + y) * kw + x) * i + c) * es;
          std::memcpy(data.data() + to, w.bytes.data() + from, es);
        }
  return HostTensor::owned(w.type, {o, kh, kw, i}, std::move(data), std::move(name));
}

namespace {

Attribute int_attribute(const char* name, int64_t value) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kInt;
  a.i = value;
  return a;
}

Node transpose(const std::string& from, const std::string& to, std::vector<int64_t> perm) {
  Node t;
  t.name = to;
  t.op_type = "Transpose";
  t.inputs = {from};
  t.outputs = {to};
  Attribute a;
  a.name = "perm";
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(perm);
  t.attributes.push_back(std::move(a));
  return t;
}

class ChannelsLast {
 public:
  explicit ChannelsLast(Model& model) : model_(model) {
    for (size_t i = 0; i < model_.graph.initializers.size(); ++i) initializers_[model_.graph.initializers[i].name] = i;
    for (const ValueInfo& o : model_.graph.outputs) graph_outputs_.insert(o.name);
  }

  ChannelsLastCounts run() {
    classify();
    ChannelsLastCounts counts;
    std::vector<Node> rewritten;
    std::map<std::string, std::string> nhwc;  // NCHW name → channels-last name
    std::vector<Node>& nodes = model_.graph.nodes;
    for (size_t j = 0; j < nodes.size(); ++j) {
      Node node = std::move(nodes[j]);
      if (kinds_[j] == Kind::kNone) {
        rewritten.push_back(std::move(node));
        continue;
      }
      for (size_t i : activation_inputs(kinds_[j], node)) {
        const std::string& name = node.inputs[i];
        const bool nchw = nhwc.count(name) == 0;  // only a convolution's input can be
        if (nchw && input_channels(node) < kChannelsLastMinTransposedChannels) {
          node.attributes.push_back(int_attribute(kChannelsLastPlanarInput, 1));  // read as it is
          ++counts.planar_inputs;
          continue;
        }
        if (nchw) {  // into the layout
          nhwc[name] = kChannelsLastPrefix + name;
          rewritten.push_back(transpose(name, nhwc[name], {0, 2, 3, 1}));
          ++counts.transposes;
        }
        node.inputs[i] = nhwc[name];
      }
      if (kinds_[j] == Kind::kConv && initializers_.count(node.inputs[1]) != 0) {
        node.inputs[1] = ohwi_weight(node.inputs[1]);
      } else if (kinds_[j] == Kind::kConv) {
        node.attributes.push_back(int_attribute(kChannelsLastPlanarWeights, 1));
      }
      if (kinds_[j] == Kind::kConv || kinds_[j] == Kind::kPool) node.domain = kChannelsLastDomain;
      ++(kinds_[j] == Kind::kConv ? counts.convolutions
                                  : (kinds_[j] == Kind::kPool ? counts.pools : counts.elementwise));
      const std::string y = node.outputs[0];
      node.outputs[0] = nhwc[y] = kChannelsLastPrefix + y;
      rewritten.push_back(std::move(node));
      if (leave_.count(y) != 0) {  // out of the layout, under the value's own name
        rewritten.push_back(transpose(nhwc[y], y, {0, 3, 1, 2}));
        ++counts.transposes;
      }
    }
    nodes = std::move(rewritten);
    drop_unread_weights();
    return counts;
  }

 private:
  // Which nodes run channels-last, in file order (topological): a node converts when the inputs it
  // needs channels-last are produced so (a convolution's own input may be transposed into it).
  void classify() {
    std::set<std::string> available;  // NCHW names of values a converted node produces
    const std::vector<Node>& nodes = model_.graph.nodes;
    kinds_.assign(nodes.size(), Kind::kNone);
    for (size_t j = 0; j < nodes.size(); ++j) {
      const Node& n = nodes[j];
      if (!n.domain.empty() && n.domain != "ai.onnx") continue;
      const auto made = [&](size_t i) { return i < n.inputs.size() && available.count(n.inputs[i]) != 0; };
      Kind kind = Kind::kNone;
      if (n.op_type == "Conv") {
        const bool residual = n.inputs.size() > kConvResidualInput && !n.inputs[kConvResidualInput].empty();
        if (convertible_conv(n) && (!residual || made(kConvResidualInput))) kind = Kind::kConv;
      } else if (n.op_type == "MaxPool" || n.op_type == "AveragePool") {
        const Attribute* k = n.attribute("kernel_shape");
        const bool indices = n.outputs.size() > 1 && !n.outputs[1].empty();
        if (made(0) && k != nullptr && k->ints.size() == 2 && !indices) kind = Kind::kPool;
      } else if (n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool") {
        if (made(0)) kind = Kind::kPool;
      } else if (unary_elementwise(n.op_type)) {
        if (made(0) && n.outputs.size() == 1) kind = Kind::kElementwise;
      } else if (binary_elementwise(n.op_type)) {
        if (n.inputs.size() == 2 && made(0) && made(1)) kind = Kind::kElementwise;
      }
      kinds_[j] = kind;
      if (kind != Kind::kNone) available.insert(n.outputs[0]);
    }
    for (size_t j = 0; j < nodes.size(); ++j) {
      for (size_t i = 0; i < nodes[j].inputs.size(); ++i) {
        if (!nodes[j].inputs[i].empty()) readers_[nodes[j].inputs[i]].push_back({j, i});
      }
    }
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (kinds_[j] != Kind::kNone && needs_nchw(nodes[j].outputs[0])) leave_.insert(nodes[j].outputs[0]);
    }
  }

  // A convertible Conv's input channels: its weight's second dim, or, unknown before compiling for
  // a weight other than an initializer, as many as take a transpose.
  int64_t input_channels(const Node& conv) const {
    auto w = initializers_.find(conv.inputs[1]);
    if (w == initializers_.end()) return kChannelsLastMinTransposedChannels;
    return model_.graph.initializers[w->second].dims[1];
  }

  bool convertible_conv(const Node& n) const {
    if (n.inputs.size() < 2 || n.outputs.size() != 1) return false;
    if (auto w = initializers_.find(n.inputs[1]); w != initializers_.end()) {
      const HostTensor& t = model_.graph.initializers[w->second];
      if (t.dims.size() != 4 || (t.type != ElemType::kFloat && t.type != ElemType::kFloat16)) return false;
    } else if (const Attribute* k = n.attribute("kernel_shape"); k == nullptr || k->ints.size() != 2) {
      return false;  // a weight of unknown rank
    }
    const Attribute* group = n.attribute("group");
    return (group == nullptr || group->i == 1) && all_ones(n.attribute("dilations")) && symmetric_padding(n);
  }

  // The inputs of a converted node that are channels-last tensors.
  static std::vector<size_t> activation_inputs(Kind kind, const Node& n) {
    std::vector<size_t> at{0};
    if (kind == Kind::kElementwise && binary_elementwise(n.op_type)) at.push_back(1);
    if (kind == Kind::kConv && n.inputs.size() > kConvResidualInput && !n.inputs[kConvResidualInput].empty()) {
      at.push_back(kConvResidualInput);
    }
    return at;
  }

  // Whether an NCHW reader (or the graph's outputs) needs value `y` of a converted node.
  bool needs_nchw(const std::string& y) const {
    if (graph_outputs_.count(y) != 0) return true;
    auto it = readers_.find(y);
    if (it == readers_.end()) return false;
    for (const auto& [j, i] : it->second) {
      const std::vector<size_t> at =
          kinds_[j] == Kind::kNone ? std::vector<size_t>{} : activation_inputs(kinds_[j], model_.graph.nodes[j]);
      if (std::find(at.begin(), at.end(), i) == at.end()) return true;
    }
    return false;
  }

  // The [O, KH, KW, I] initializer of weight `name`, made once.
  std::string ohwi_weight(const std::string& name) {
    const std::string permuted = kChannelsLastPrefix + name;
    if (initializers_.count(permuted) == 0) {
      replaced_.insert(name);
      HostTensor copy = ohwi_copy(model_.graph.initializers[initializers_.at(name)], permuted);
      initializers_[permuted] = model_.graph.initializers.size();
      model_.graph.initializers.push_back(std::move(copy));
    }
    return permuted;
  }

  // The NCHW weights no node reads any more (their permuted copies replaced them): not kept twice.
  // Initializers that IR < 4 lists among the graph's inputs stay, or they would become inputs.
  void drop_unread_weights() {
    std::set<std::string> read(graph_outputs_);
    for (const Node& n : model_.graph.nodes) read.insert(n.inputs.begin(), n.inputs.end());
    for (const ValueInfo& in : model_.graph.inputs) read.insert(in.name);
    std::vector<HostTensor>& all = model_.graph.initializers;
    all.erase(
        std::remove_if(all.begin(), all.end(),
                       [&](const HostTensor& t) { return replaced_.count(t.name) != 0 && read.count(t.name) == 0; }),
        all.end());
  }

  Model& model_;
  std::map<std::string, size_t> initializers_;
  std::set<std::string> graph_outputs_;
  std::set<std::string> replaced_;
  std::set<std::string> leave_;  // values of converted nodes that NCHW readers or the outputs need
  std::vector<Kind> kinds_;
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> readers_;  // value → (node, input)
};

}  // namespace

ChannelsLastCounts convert_to_channels_last(Model& model) {
  return ChannelsLast(model).run();
}

}  // namespace recon::gpu::onnx
