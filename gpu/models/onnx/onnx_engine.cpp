#include "gpu/models/onnx/onnx_engine.h"

#include <algorithm>

#include "gpu/models/onnx/onnx_file.h"
#include "gpu/models/onnx/onnx_fusion.h"
#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/models/onnx/onnx_value.h"
#include "gpu/ops/matmul.h"

namespace recon::gpu::onnx {

EngineOptions engine_options(Precision precision) {
  EngineOptions options;
  options.float_dtype = is_fp32(precision) ? DType::kF32 : DType::kF16;
  options.fp32_split = precision == Precision::kF32Split;
  return options;
}

namespace {

// kAuto: fp16 on tensor cores, and fp32 wherever it runs on the scalar core, whose loads take 4
// channels of a pixel at a time. ResNet-50 on an H200 (recon-run --layout, batch 32 / 1): fp16 5.41 →
// 4.74 ms and 1.44 → 1.16 ms; fp32 18.2 → 11.6 ms and 1.35 → 1.33–1.35 ms. On lavapipe (2 cores,
// batch 1) ONNX's light models in fp32 gained too, transposes and all: ResNet-50 2.18 → 1.95 s (102
// transposes), Inception v1 781 → 670 ms, SqueezeNet 228 → 215 ms. fp32-split lost (14.5 → 19.0 ms and
// 1.80 → 1.91 ms), and fp16 on the scalar core was not measured.
bool runs_channels_last(const EngineOptions& options, const Capabilities& caps) {
  if (options.layout != EngineOptions::Layout::kAuto) return options.layout == EngineOptions::Layout::kChannelsLast;
  if (options.float_dtype == DType::kF16) return ops::coopmat_gemm_available(caps);
  return !options.fp32_split;
}

// Whether every dim of every runtime input is fixed, so the graph can be compiled at load.
bool static_inputs(const std::vector<const ValueInfo*>& inputs) {
  for (const ValueInfo* in : inputs) {
    if (!in->has_shape) return false;
    for (int64_t d : in->dims) {
      if (d < 0) return false;
    }
  }
  return true;
}

// Whether node input `slot` of `op_type` is a parameter that decides the op's geometry or a
// constant of it rather than data: Resize's roi and scales, Upsample's scales, Pad's constant,
// Range's start, limit and delta (its length is its output's shape), OneHot's depth (the new axis)
// and its two values, Dropout's ratio and training mode (which decide whether it can run at all).
bool parameter_slot(const std::string& op_type, size_t slot) {
  if (op_type == "Resize") return slot == 1 || slot == 2;
  if (op_type == "OneHot" || op_type == "Dropout") return slot == 1 || slot == 2;
  if (op_type == "Range") return true;
  if (op_type == "Upsample") return slot == 1;
  if (op_type == "Pad") return slot == 2;
  return false;
}

// For each runtime input: whether every node that reads it reads it as a parameter.
std::vector<bool> parameter_inputs(const Model& model, const std::vector<const ValueInfo*>& inputs) {
  std::vector<bool> out;
  for (const ValueInfo* in : inputs) {
    bool read = false, only_parameter = true;
    for (const Node& node : model.graph.nodes) {
      for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
        if (node.inputs[slot] != in->name) continue;
        read = true;
        only_parameter = only_parameter && parameter_slot(node.op_type, slot);
      }
    }
    out.push_back(read && only_parameter);
  }
  return out;
}

}  // namespace

Engine::Engine(Runtime& rt, Model model, const EngineOptions& options)
    : rt_(rt),
      model_(std::move(model)),
      options_(options),
      inputs_(runtime_inputs(model_)),
      parameter_inputs_(parameter_inputs(model_, inputs_)) {}

Result<std::unique_ptr<Engine>> Engine::load(Runtime& rt, const std::string& path, const EngineOptions& options) {
  // The reader's errors name the file already; callers add it to the others (recond: "loading ... from PATH").
  RECON_ASSIGN_OR_RETURN(Model model, read_onnx_model(path));
  return from_model(rt, std::move(model), options);
}

Result<std::unique_ptr<Engine>> Engine::from_model(Runtime& rt, Model model, const EngineOptions& options) {
  if (options.float_dtype != DType::kF32 && options.float_dtype != DType::kF16) {
    return invalid_argument("ONNX models run in f32 or f16");
  }
  const std::vector<std::string> unsupported = unsupported_nodes(model);
  if (!unsupported.empty()) {
    std::string msg = std::to_string(unsupported.size()) + " node(s) recon cannot run:";
    for (const std::string& line : unsupported) msg += "\n  " + line;
    return unimplemented(msg);
  }
  const FusionCounts fused = fuse_graph(model);
  ChannelsLastCounts channels_last;
  if (runs_channels_last(options, rt.caps())) channels_last = convert_to_channels_last(model);
  std::unique_ptr<Engine> engine(new Engine(rt, std::move(model), options));
  engine->fused_ = fused;
  engine->channels_last_ = channels_last;
  if (static_inputs(engine->inputs_)) {
    // Fixed shapes compile now, so that a model that cannot be built fails to load.
    bool shape_tensors = false;
    std::vector<HostTensor> placeholders;
    for (size_t i = 0; i < engine->inputs_.size(); ++i) {
      shape_tensors = shape_tensors || engine->is_shape_tensor(i);
      HostTensor t;
      t.type = engine->inputs_[i]->type;
      t.dims = engine->inputs_[i]->dims;
      placeholders.push_back(std::move(t));
    }
    if (!shape_tensors) RECON_RETURN_IF_ERROR(engine->compiled(placeholders).status());
  }
  return engine;
}

bool Engine::is_shape_tensor(size_t i) const {
  const ValueInfo& in = *inputs_[i];
  const bool integer = in.type == ElemType::kInt64 || in.type == ElemType::kInt32;
  if (!integer && !(parameter_inputs_[i] && (is_floating(in.type) || in.type == ElemType::kBool))) return false;
  if (!in.has_shape) return true;
  int64_t n = 1;
  for (int64_t d : in.dims) n *= d < 0 ? kMaxShapeTensorElements + 1 : d;
  return n <= kMaxShapeTensorElements;
}

Result<CompiledGraph*> Engine::compiled(std::span<const HostTensor> inputs) {
  std::vector<std::vector<int64_t>> key;
  std::vector<InputSpec> specs;
  // Shape tensors are read once, here: their bytes may be a client's shared memory, which can
  // change at any time, and the key and the graph it caches must see the same values.
  std::vector<HostTensor> values;
  values.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    key.push_back(inputs[i].dims);
    InputSpec spec{inputs[i].dims, nullptr};
    if (is_shape_tensor(i)) {
      values.push_back(HostTensor::owned(inputs[i].type, inputs[i].dims,
                                         std::vector<uint8_t>(inputs[i].bytes.begin(), inputs[i].bytes.end()),
                                         inputs[i].name));
      spec.value = &values.back();
      key.emplace_back(values.back().bytes.begin(), values.back().bytes.end());
    }
    specs.push_back(spec);
  }
  auto it = compiled_.find(key);
  if (it != compiled_.end()) {
    recent_.splice(recent_.begin(), recent_, std::find(recent_.begin(), recent_.end(), key));
    return it->second.get();
  }
  RECON_ASSIGN_OR_RETURN(
      std::unique_ptr<CompiledGraph> graph,
      compile_graph(rt_, model_, specs,
                    {options_.float_dtype, options_.fp32_split ? ops::GemmPath::kAutoSplitF32 : ops::GemmPath::kAuto},
                    &weights_));
  CompiledGraph* raw = graph.get();
  if (compiled_.size() >= std::max<size_t>(options_.max_compiled_graphs, 1)) {
    compiled_.erase(recent_.back());
    recent_.pop_back();
  }
  recent_.push_front(key);
  compiled_.emplace(std::move(key), std::move(graph));
  return raw;
}

Status Engine::check_inputs(std::span<const HostTensor> inputs, const std::vector<bool>& device_held) const {
  if (inputs.size() != inputs_.size()) {
    return invalid_argument("the model takes " + std::to_string(inputs_.size()) + " inputs, got " +
                            std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& want = *inputs_[i];
    const HostTensor& got = inputs[i];
    if (got.type != want.type) {
      return invalid_argument("input '" + want.name + "' must be " + elem_type_name(want.type) + ", is " +
                              elem_type_name(got.type));
    }
    bool fits = !want.has_shape || want.dims.size() == got.dims.size();
    for (size_t d = 0; fits && want.has_shape && d < want.dims.size(); ++d) {
      fits = want.dims[d] < 0 || want.dims[d] == got.dims[d];
    }
    if (!fits) {
      return invalid_argument("input '" + want.name + "' must have shape " + shape_string(want.dims) +
                              " (-1: any), is " + shape_string(got.dims));
    }
    const bool on_device = i < device_held.size() && device_held[i];
    if (!on_device && got.bytes.size() != static_cast<size_t>(got.numel()) * elem_type_size(got.type)) {
      return invalid_argument("input '" + want.name + "' holds the wrong number of bytes");
    }
  }
  return Status::ok();
}

Result<Tensor> Engine::upload_input(const HostTensor& input, const CompiledInput& slot) {
  RECON_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, to_device_bytes(input, slot.dtype));
  return Tensor::from_host(rt_, slot.dtype, slot.shape, bytes.data(), bytes.size());
}

Result<std::vector<Tensor>> Engine::upload_inputs(const CompiledGraph& graph, std::span<const HostTensor> inputs) {
  std::vector<Tensor> bound;
  for (size_t i = 0, slot = 0; i < inputs.size(); ++i) {
    if (is_shape_tensor(i)) continue;
    if (slot >= graph.inputs.size()) return invalid_argument("more inputs than the graph has slots");
    RECON_ASSIGN_OR_RETURN(Tensor t, upload_input(inputs[i], graph.inputs[slot++]));
    bound.push_back(std::move(t));
  }
  return bound;
}

Result<std::vector<Tensor>> Engine::run_on_device(std::span<const EngineInput> inputs) {
  RECON_ASSIGN_OR_RETURN(Execution done, execute(inputs));
  return std::move(done.outputs);
}

Result<Engine::Execution> Engine::execute(std::span<const EngineInput> inputs) {
  std::vector<HostTensor> described;
  std::vector<bool> device_held;
  for (const EngineInput& in : inputs) {
    described.push_back(in.host);
    device_held.push_back(in.device.has_value());
  }
  RECON_RETURN_IF_ERROR(check_inputs(described, device_held));
  for (size_t i = 0; i < inputs.size(); ++i) {
    // A shape tensor's values decide the graph: one held on the device is read back (≤ 64 values).
    if (device_held[i] && is_shape_tensor(i)) {
      std::vector<uint8_t> bytes(inputs[i].device->bytes());
      RECON_RETURN_IF_ERROR(inputs[i].device->download(rt_, bytes.data(), bytes.size()));
      RECON_ASSIGN_OR_RETURN(described[i], from_device_bytes(bytes, inputs[i].device->dtype(), described[i].type,
                                                             described[i].dims, described[i].name));
      device_held[i] = false;
    }
  }
  RECON_ASSIGN_OR_RETURN(CompiledGraph * graph, compiled(described));
  std::vector<Tensor> bound;
  for (size_t i = 0, slot = 0; i < inputs.size(); ++i) {
    if (is_shape_tensor(i)) continue;
    const CompiledInput& in = graph->inputs[slot++];
    if (device_held[i]) {
      const Tensor& t = *inputs[i].device;
      if (t.dtype() != in.dtype) {
        return invalid_argument("input '" + in.name + "' is a " + dtype_name(t.dtype()) + " tensor on the GPU; this " +
                                "model takes " + dtype_name(in.dtype) + " there (run both models in one precision)");
      }
      RECON_ASSIGN_OR_RETURN(Tensor view, t.reshape(in.shape));
      bound.push_back(std::move(view));
      continue;
    }
    RECON_ASSIGN_OR_RETURN(Tensor t, upload_input(described[i], in));
    bound.push_back(std::move(t));
  }
  RECON_ASSIGN_OR_RETURN(std::vector<Tensor> results, graph->new_outputs(rt_));
  RECON_RETURN_IF_ERROR(graph->run(bound, results));
  return Execution{graph, std::move(results)};
}

Result<std::vector<HostTensor>> Engine::run(std::span<const HostTensor> inputs) {
  std::vector<EngineInput> on_host;
  for (const HostTensor& t : inputs) on_host.push_back({t, std::nullopt});
  RECON_ASSIGN_OR_RETURN(Execution done, execute(on_host));
  std::vector<HostTensor> outputs;
  for (size_t i = 0; i < done.outputs.size(); ++i) {
    const CompiledOutput& o = done.graph->outputs[i];
    const Tensor& result = done.outputs[i];
    std::vector<uint8_t> bytes(result.bytes());
    RECON_RETURN_IF_ERROR(result.download(rt_, bytes.data(), bytes.size()));
    RECON_ASSIGN_OR_RETURN(HostTensor t, from_device_bytes(bytes, o.dtype, o.type, o.shape, o.name));
    outputs.push_back(std::move(t));
  }
  return outputs;
}

}  // namespace recon::gpu::onnx
