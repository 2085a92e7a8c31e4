// What an op builder of the ONNX compiler sees of one node: its attributes, its input values
// (host or device), the runtime to record dispatches into, and how to publish outputs. Builders
// (onnx_ops_*.cpp) either compute outputs on the host, when every input they need is known at load
// time (shape arithmetic), or record GPU dispatches into the graph.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/graph.h"
#include "gpu/models/onnx/onnx_memory_plan.h"
#include "gpu/models/onnx/onnx_model.h"
#include "gpu/models/onnx/onnx_value.h"
#include "gpu/ops/matmul.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::gpu::onnx {

// How a compiled graph computes.
struct Arithmetic {
  DType float_dtype = DType::kF32;  // every floating tensor's dtype; kF16: fp16 storage, fp32 arithmetic
  // GEMMs and convolutions: kAuto (fp16 on tensor cores, fp32 on the scalar path), or
  // kAutoSplitF32 (fp32 on tensor cores too, each operand as two fp16 parts: ops/matmul.h).
  ops::GemmPath gemm_path = ops::GemmPath::kAuto;
};

class OpContext {
 public:
  OpContext(Runtime& rt, Graph& graph, MemoryPlan& memory, const Arithmetic& arithmetic, const Node& node,
            int64_t opset, std::vector<Value*> inputs)
      : rt_(rt),
        graph_(graph),
        memory_(memory),
        arithmetic_(arithmetic),
        node_(node),
        opset_(opset),
        inputs_(std::move(inputs)),
        outputs_(node.outputs.size()) {}
  ~OpContext();
  OpContext(const OpContext&) = delete;
  OpContext& operator=(const OpContext&) = delete;

  Runtime& runtime() { return rt_; }
  Graph& graph() { return graph_; }
  const Capabilities& caps() const { return rt_.caps(); }
  DType float_dtype() const { return arithmetic_.float_dtype; }
  ops::GemmPath gemm_path() const { return arithmetic_.gemm_path; }
  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }

  // ---- attributes (defaults where the node does not set them) ----
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(std::string_view name) const;
  bool has_attr(std::string_view name) const { return node_.attribute(name) != nullptr; }

  // ---- inputs ----
  size_t input_count() const { return inputs_.size(); }
  // False for an omitted optional input (empty name) or one past the end.
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Value& input(size_t i) const { return *inputs_[i]; }
  bool all_inputs_on_host() const;
  // The input's value, which must be known at load time (a shape, axes, pads...).
  Result<const HostTensor*> host_input(size_t i) const;
  // The input's integers (any integer type), which must be known at load time.
  Result<std::vector<int64_t>> host_ints(size_t i) const;
  // The input on the device in its device dtype; host values are uploaded once (weights).
  Result<Arg> device_input(size_t i);
  // The same, and only a floating tensor (the arithmetic ops' only dtype).
  Result<Arg> float_input(size_t i);
  // A device tensor derived from input i (a weight), made by `make` the first time this input is
  // asked for `derivation` and kept with it: an initializer's is shared by every compiled graph.
  Result<Arg> derived_input(size_t i, const std::string& derivation, const std::function<Result<Arg>()>& make);

  // ---- outputs ----
  size_t output_count() const { return outputs_.size(); }
  bool wants_output(size_t i) const { return i < node_.outputs.size() && !node_.outputs[i].empty(); }
  // A fresh device tensor for output i.
  Result<Arg> new_output(size_t i, ElemType type, const Shape& shape);
  // Output i as a value known on the host (folded).
  void set_host_output(size_t i, HostTensor t);
  // The same from a fold that may fail: its error names this node.
  Status set_host_result(size_t i, Result<HostTensor> t);
  // Output i as a view of input `of` under another shape (reshape, squeeze, identity...).
  Status set_view_output(size_t i, size_t of, const Shape& shape);
  std::vector<Value>& outputs() { return outputs_; }
  // A device tensor used only inside this node's dispatches (freed for later nodes afterwards).
  Result<Arg> scratch(DType dtype, const Shape& shape);

  // An error naming this node, for builders.
  Status fail(const std::string& why) const;
  // `axis` counted from the end when negative, or an error when it is outside [−rank, rank).
  Status normalise_axis(int64_t& axis, int64_t rank) const;

 private:
  Runtime& rt_;
  Graph& graph_;
  MemoryPlan& memory_;
  Arithmetic arithmetic_;
  const Node& node_;
  int64_t opset_;
  std::vector<Value*> inputs_;
  std::vector<Value> outputs_;
  std::vector<int> scratch_;
};

// Uploads a host value to the device once (weights, constants); later calls return the same tensor.
Result<Arg> upload_host_value(Runtime& rt, Value& v, DType float_dtype);
// A host tensor a builder made (a rearranged weight, indices, a constant) uploaded as a value of its
// own type and shape.
Result<Arg> upload_host_tensor(Runtime& rt, HostTensor t, DType float_dtype);

// The node's label in errors: "Conv 'conv1' (node 12, opset 13)"-like, without the index.
std::string node_label(const Node& node, int64_t opset);

}  // namespace recon::gpu::onnx
