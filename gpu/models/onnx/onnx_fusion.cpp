#include "gpu/models/onnx/onnx_fusion.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_host.h"
#include "gpu/ops/matmul.h"

namespace recon::gpu::onnx {
namespace {

class Fuser {
 public:
  explicit Fuser(Model& model) : model_(model) {
    for (size_t i = 0; i < model_.graph.initializers.size(); ++i) {
      initializers_[model_.graph.initializers[i].name] = i;
    }
    for (const ValueInfo& o : model_.graph.outputs) graph_outputs_.insert(o.name);
  }

  FusionCounts run() {
    FusionCounts counts;
    count_readers();
    for (size_t i = 0; i < nodes().size(); ++i) {
      if (dead_.count(i) != 0) continue;
      Node& n = nodes()[i];
      if (n.op_type == "Conv" && fold_batch_norm(n)) ++counts.batch_norms;
      if (n.op_type == "Conv" && fuse_residual(n)) ++counts.residuals;
      if (n.op_type == "MatMul" && fuse_bias(n)) ++counts.biases;
      if ((n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul") && fuse_activation(n)) {
        ++counts.activations;
      }
    }
    std::vector<Node> kept;
    for (size_t i = 0; i < nodes().size(); ++i) {
      if (dead_.count(i) == 0) kept.push_back(std::move(nodes()[i]));
    }
    nodes() = std::move(kept);
    return counts;
  }

 private:
  std::vector<Node>& nodes() { return model_.graph.nodes; }

  void count_readers() {
    for (size_t i = 0; i < nodes().size(); ++i) {
      for (const std::string& in : nodes()[i].inputs) {
        if (!in.empty()) readers_[in].push_back(i);
      }
    }
  }

  // The one node reading `value`, when nothing else (no other node, no graph output) does.
  Node* sole_reader(const std::string& value, size_t& index) {
    if (graph_outputs_.count(value) != 0) return nullptr;
    auto it = readers_.find(value);
    if (it == readers_.end() || it->second.size() != 1) return nullptr;
    index = it->second[0];
    if (dead_.count(index) != 0) return nullptr;
    return &nodes()[index];
  }

  const HostTensor* float_initializer(const std::string& name) const {
    auto it = initializers_.find(name);
    if (it == initializers_.end()) return nullptr;
    const HostTensor& t = model_.graph.initializers[it->second];
    return t.type == ElemType::kFloat ? &t : nullptr;
  }

  // `reader` takes over `producer`'s place: its output becomes the producer's.
  void absorb(Node& producer, size_t reader_index) {
    Node& reader = nodes()[reader_index];
    producer.outputs[0] = reader.outputs[0];
    // Readers of the new output are the reader's readers: the reader is gone.
    dead_.insert(reader_index);
  }

  HostTensor add_initializer(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& values) {
    HostTensor t = make_float_tensor(std::move(dims), values, name);
    initializers_[name] = model_.graph.initializers.size();
    model_.graph.initializers.push_back(t);
    return t;
  }

  bool fold_batch_norm(Node& conv) {
    size_t bn_index = 0;
    Node* bn = sole_reader(conv.outputs[0], bn_index);
    if (bn == nullptr || bn->op_type != "BatchNormalization" || bn->outputs.size() != 1 || bn->inputs.size() != 5) {
      return false;
    }
    if (const Attribute* t = bn->attribute("training_mode"); t != nullptr && t->i != 0) return false;
    const HostTensor* w = conv.inputs.size() > 1 ? float_initializer(conv.inputs[1]) : nullptr;
    const HostTensor* b =
        conv.inputs.size() > 2 && !conv.inputs[2].empty() ? float_initializer(conv.inputs[2]) : nullptr;
    const HostTensor *scale = float_initializer(bn->inputs[1]), *shift = float_initializer(bn->inputs[2]),
                     *mean = float_initializer(bn->inputs[3]), *var = float_initializer(bn->inputs[4]);
    if (w == nullptr || w->dims.empty() || scale == nullptr || shift == nullptr || mean == nullptr || var == nullptr) {
      return false;
    }
    if (conv.inputs.size() > 2 && !conv.inputs[2].empty() && b == nullptr) return false;
    const int64_t cout = w->dims[0];
    for (const HostTensor* p : {scale, shift, mean, var}) {
      if (p->numel() != cout) return false;
    }
    if (b != nullptr && b->numel() != cout) return false;
    const Attribute* eps_attr = bn->attribute("epsilon");
    const double eps = eps_attr != nullptr ? eps_attr->f : 1e-5;
    const int64_t per_out = w->numel() / cout;
    const auto wv = w->values<float>();
    std::vector<float> new_w(wv.begin(), wv.end()), new_b(static_cast<size_t>(cout));
    for (int64_t o = 0; o < cout; ++o) {
      const size_t k = static_cast<size_t>(o);
      const double s = double(scale->values<float>()[k]) / std::sqrt(double(var->values<float>()[k]) + eps);
      for (int64_t j = 0; j < per_out; ++j) new_w[static_cast<size_t>(o * per_out + j)] *= static_cast<float>(s);
      const double bias = b != nullptr ? b->values<float>()[k] : 0.0;
      new_b[k] = static_cast<float>((bias - mean->values<float>()[k]) * s + shift->values<float>()[k]);
    }
    const std::string base = conv.outputs[0] + ".bn_folded";
    add_initializer(base + ".weight", w->dims, new_w);
    add_initializer(base + ".bias", {cout}, new_b);
    conv.inputs.resize(3);
    conv.inputs[1] = base + ".weight";
    conv.inputs[2] = base + ".bias";
    absorb(conv, bn_index);
    return true;
  }

  bool fuse_residual(Node& conv) {
    if (conv.attribute(kFusedActivation) != nullptr) return false;
    size_t add_index = 0;
    Node* add = sole_reader(conv.outputs[0], add_index);
    if (add == nullptr || add->op_type != "Add" || add->inputs.size() != 2) return false;
    const std::string& other = add->inputs[0] == conv.outputs[0] ? add->inputs[1] : add->inputs[0];
    if (other == conv.outputs[0] || initializers_.count(other) != 0) return false;
    // The other operand must exist before the convolution runs: it is read by its epilogue.
    if (!defined_before(other, conv)) return false;
    conv.inputs.resize(kConvResidualInput + 1);
    conv.inputs[kConvResidualInput] = other;
    absorb(conv, add_index);
    readers_[other].push_back(index_of(conv));
    return true;
  }

  bool fuse_bias(Node& matmul) {
    if (matmul.inputs.size() != 2) return false;
    size_t add_index = 0;
    Node* add = sole_reader(matmul.outputs[0], add_index);
    if (add == nullptr || add->op_type != "Add" || add->inputs.size() != 2) return false;
    const std::string& other = add->inputs[0] == matmul.outputs[0] ? add->inputs[1] : add->inputs[0];
    const HostTensor* bias = float_initializer(other);
    const HostTensor* w = float_initializer(matmul.inputs[1]);
    if (bias == nullptr || w == nullptr || w->dims.size() != 2) return false;
    if (bias->dims != std::vector<int64_t>{w->dims[1]}) return false;
    matmul.inputs.push_back(other);
    absorb(matmul, add_index);
    return true;
  }

  bool fuse_activation(Node& producer) {
    if (producer.attribute(kFusedActivation) != nullptr || producer.outputs.size() != 1) return false;
    size_t act_index = 0;
    Node* act = sole_reader(producer.outputs[0], act_index);
    if (act == nullptr) return false;
    gpu::ops::Activation a;
    if (act->op_type == "Relu") {
      a = gpu::ops::Activation::kRelu;
    } else if (act->op_type == "Sigmoid") {
      a = gpu::ops::Activation::kSigmoid;
    } else if (act->op_type == "Tanh") {
      a = gpu::ops::Activation::kTanh;
    } else {
      return false;
    }
    // With a residual already fused the activation comes after the sum (the epilogue's
    // residual-first order).
    if (producer.inputs.size() > kConvResidualInput && producer.op_type == "Conv") {
      Attribute first;
      first.name = kFusedResidualFirst;
      first.kind = Attribute::Kind::kInt;
      first.i = 1;
      producer.attributes.push_back(first);
    }
    Attribute attr;
    attr.name = kFusedActivation;
    attr.kind = Attribute::Kind::kInt;
    attr.i = static_cast<int64_t>(a);
    producer.attributes.push_back(attr);
    absorb(producer, act_index);
    return true;
  }

  size_t index_of(const Node& n) const { return static_cast<size_t>(&n - model_.graph.nodes.data()); }

  bool defined_before(const std::string& value, const Node& n) {
    if (initializers_.count(value) != 0) return true;
    for (const ValueInfo& in : model_.graph.inputs) {
      if (in.name == value) return true;
    }
    const size_t limit = index_of(n);
    for (size_t i = 0; i < limit; ++i) {
      if (dead_.count(i) != 0) continue;
      for (const std::string& o : nodes()[i].outputs) {
        if (o == value) return true;
      }
    }
    return false;
  }

  Model& model_;
  std::map<std::string, size_t> initializers_;
  std::set<std::string> graph_outputs_;
  std::map<std::string, std::vector<size_t>> readers_;
  std::set<size_t> dead_;
};

}  // namespace

FusionCounts fuse_graph(Model& model) {
  return Fuser(model).run();
}

}  // namespace recon::gpu::onnx
