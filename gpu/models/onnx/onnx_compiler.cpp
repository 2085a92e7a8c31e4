#include "gpu/models/onnx/onnx_compiler.h"

#include <limits>
#include <set>
#include <unordered_map>

#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_context.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/models/onnx/onnx_value.h"
#include "gpu/ops/cast.h"

namespace recon::gpu::onnx {
namespace {

constexpr size_t kForever = std::numeric_limits<size_t>::max();

class Compiler {
 public:
  Compiler(Runtime& rt, const Model& model, const Arithmetic& arithmetic, DeviceWeights* weights)
      : rt_(rt), model_(model), arithmetic_(arithmetic), weights_(weights) {
    out_ = std::make_unique<CompiledGraph>();
    out_->graph = std::make_unique<Graph>(rt);
    out_->memory = std::make_unique<MemoryPlan>(rt);
  }

  Result<std::unique_ptr<CompiledGraph>> run(const std::vector<InputSpec>& specs) {
    RECON_RETURN_IF_ERROR(add_initializers());
    RECON_RETURN_IF_ERROR(add_inputs(specs));
    compute_last_uses();
    const int64_t opset = model_.opset();
    for (size_t i = 0; i < model_.graph.nodes.size(); ++i) {
      RECON_RETURN_IF_ERROR(build_node(i, opset));
    }
    RECON_RETURN_IF_ERROR(add_outputs());
    keep_uploaded_weights();
    return std::move(out_);
  }

 private:
  Status add_initializers() {
    for (const HostTensor& t : model_.graph.initializers) {
      Value v;
      v.type = t.type;
      v.shape = t.dims;
      v.host = t;
      if (weights_ != nullptr) {
        if (auto it = weights_->uploaded.find(t.name); it != weights_->uploaded.end()) v.device = it->second;
        for (auto it = weights_->derived.lower_bound({t.name, ""});
             it != weights_->derived.end() && it->first.first == t.name; ++it) {
          v.derived.emplace(it->first.second, it->second);
        }
      }
      values_[t.name] = std::move(v);
    }
    return Status::ok();
  }

  // The initializers this compile put on the device, for the engine's next compiles.
  void keep_uploaded_weights() {
    if (weights_ == nullptr) return;
    for (const HostTensor& t : model_.graph.initializers) {
      const Value& v = values_.at(t.name);
      if (v.device) weights_->uploaded.emplace(t.name, *v.device);
      for (const auto& [derivation, arg] : v.derived) weights_->derived.emplace(std::pair(t.name, derivation), arg);
    }
  }

  Status add_inputs(const std::vector<InputSpec>& specs) {
    const std::vector<const ValueInfo*> inputs = runtime_inputs(model_);
    if (specs.size() != inputs.size()) {
      return invalid_argument("the model has " + std::to_string(inputs.size()) + " inputs, " +
                              std::to_string(specs.size()) + " were described");
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ValueInfo& info = *inputs[i];
      const Shape& shape = specs[i].shape;
      if (specs[i].value != nullptr) {
        Value v;
        v.type = info.type;
        v.shape = shape;
        v.host = *specs[i].value;
        values_[info.name] = std::move(v);
        continue;
      }
      const std::optional<DType> dtype = device_dtype(info.type, arithmetic_.float_dtype);
      if (!dtype) {
        return invalid_argument(std::string("input '") + info.name + "' of type " + elem_type_name(info.type) +
                                " cannot live on the GPU");
      }
      if (shape_numel(shape) == 0) return invalid_argument("input '" + info.name + "' is empty");
      Value v;
      v.type = info.type;
      v.shape = shape;
      // The slot holds the declared type as it is (f32 for float, f16 for float16): callers copy
      // their bytes as they are, and a float input of an fp16 graph is cast on the GPU here.
      const DType io = io_dtype(info.type, *dtype);
      const Arg slot = out_->graph->add_slot(info.name, io, shape);
      out_->inputs.push_back({info.name, info.type, shape, io, slot});
      v.device = slot;
      if (io != *dtype) {
        RECON_ASSIGN_OR_RETURN(Tensor t, out_->memory->allocate(*dtype, shape, v.storage));
        RECON_RETURN_IF_ERROR(gpu::ops::cast(*out_->graph, slot, t).with_context("input '" + info.name + "'"));
        v.device = Arg(t);
      }
      values_[info.name] = std::move(v);
    }
    return Status::ok();
  }

  // The dtype a graph input or output is bound with: floats as declared, others as on the device.
  static DType io_dtype(ElemType type, DType device) {
    if (type == ElemType::kFloat16) return DType::kF16;
    return is_floating(type) ? DType::kF32 : device;
  }

  void compute_last_uses() {
    for (size_t i = 0; i < model_.graph.nodes.size(); ++i) {
      for (const std::string& in : model_.graph.nodes[i].inputs) {
        if (!in.empty()) last_use_[in] = i;
      }
    }
    for (const ValueInfo& o : model_.graph.outputs) last_use_[o.name] = kForever;
  }

  Status build_node(size_t index, int64_t opset) {
    const Node& node = model_.graph.nodes[index];
    const std::string where = "node " + std::to_string(index) + ": " + node_label(node, opset);
    const OpRow* row = find_op(node, opset);
    if (row == nullptr) return invalid_argument(where + ": unsupported");
    std::vector<Value*> inputs;
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = values_.find(name);
      if (it == values_.end()) {
        return invalid_argument(where + ": input '" + name +
                                "' is not produced by an earlier node (the graph is not in topological order or "
                                "has a cycle)");
      }
      inputs.push_back(&it->second);
    }
    bool all_host = true;
    for (Value* v : inputs) all_host = all_host && (v == nullptr || v->is_host());
    {
      OpContext ctx(rt_, *out_->graph, *out_->memory, arithmetic_, node, opset, inputs);
      Status built = row->build(ctx);
      if (!built.is_ok()) {
        return Status(built.code(), built.message().rfind(node.op_type, 0) == 0
                                        ? "node " + std::to_string(index) + ": " + built.message()
                                        : where + ": " + built.message());
      }
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        const std::string& name = node.outputs[o];
        if (name.empty()) continue;
        Value& v = ctx.outputs()[o];
        if (!v.is_host() && !v.device) return internal_error(where + ": output '" + name + "' was not produced");
        if (values_.count(name) != 0) return invalid_argument(where + ": output '" + name + "' is assigned twice");
        const bool read_later = last_use_.count(name) != 0;
        if (!read_later) out_->memory->release(v.storage);
        values_[name] = std::move(v);
      }
      for (size_t o = node.outputs.size(); o < ctx.outputs().size(); ++o)
        out_->memory->release(ctx.outputs()[o].storage);
    }
    if (all_host) ++out_->folded_nodes;
    // Inputs whose last reader this node was free their storage for later nodes.
    std::set<std::string> seen;
    for (const std::string& name : node.inputs) {
      if (name.empty() || !seen.insert(name).second) continue;
      auto it = last_use_.find(name);
      if (it != last_use_.end() && it->second == index) out_->memory->release(values_[name].storage);
    }
    return Status::ok();
  }

  Status add_outputs() {
    for (const ValueInfo& info : model_.graph.outputs) {
      auto it = values_.find(info.name);
      if (it == values_.end()) return invalid_argument("graph output '" + info.name + "' is never produced");
      Value& v = it->second;
      // A constant output is uploaded once and copied like any other.
      RECON_ASSIGN_OR_RETURN(Arg src,
                             v.device ? Result<Arg>(*v.device) : upload_host_value(rt_, v, arithmetic_.float_dtype));
      const DType dtype = io_dtype(v.type, src.dtype());
      CompiledOutput out{info.name, v.type, v.shape, dtype,
                         out_->graph->add_slot("output:" + info.name, dtype, v.shape)};
      RECON_RETURN_IF_ERROR(gpu::ops::cast(*out_->graph, src, out.slot).with_context("output '" + info.name + "'"));
      out_->outputs.push_back(std::move(out));
    }
    return Status::ok();
  }

  Runtime& rt_;
  const Model& model_;
  Arithmetic arithmetic_;
  DeviceWeights* weights_;  // may be null
  std::unique_ptr<CompiledGraph> out_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, size_t> last_use_;
};

}  // namespace

std::vector<const ValueInfo*> runtime_inputs(const Model& model) {
  std::set<std::string> initializers;
  for (const HostTensor& t : model.graph.initializers) initializers.insert(t.name);
  std::vector<const ValueInfo*> out;
  for (const ValueInfo& in : model.graph.inputs) {
    if (initializers.count(in.name) == 0) out.push_back(&in);
  }
  return out;
}

Result<std::unique_ptr<CompiledGraph>> compile_graph(Runtime& rt, const Model& model,
                                                     const std::vector<InputSpec>& inputs, const Arithmetic& arithmetic,
                                                     DeviceWeights* weights) {
  Compiler compiler(rt, model, arithmetic, weights);
  return compiler.run(inputs);
}

Status CompiledGraph::run(std::span<const Tensor> bound_inputs, std::span<const Tensor> bound_outputs) {
  if (bound_inputs.size() != inputs.size() || bound_outputs.size() != outputs.size()) {
    return invalid_argument("wrong number of input or output tensors");
  }
  for (size_t i = 0; i < inputs.size(); ++i) RECON_RETURN_IF_ERROR(graph->bind(inputs[i].slot, bound_inputs[i]));
  for (size_t i = 0; i < outputs.size(); ++i) RECON_RETURN_IF_ERROR(graph->bind(outputs[i].slot, bound_outputs[i]));
  RECON_RETURN_IF_ERROR(graph->run());
  for (const Tensor& t : bound_outputs) t.invalidate_host();
  return Status::ok();
}

Result<std::vector<Tensor>> CompiledGraph::new_outputs(Runtime& rt) const {
  std::vector<Tensor> out;
  for (const CompiledOutput& o : outputs) {
    RECON_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(rt, o.dtype, o.shape));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace recon::gpu::onnx
