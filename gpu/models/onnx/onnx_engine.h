// An ONNX model ready to run on one GPU: loaded and checked as a whole (every node the op table
// cannot run is named in one error before anything is built), compiled once per set of input
// shapes (cached), run with host tensors in and out. Tools and tests use it directly; the daemon's
// onnx model kind will own one per device.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_channels_last.h"
#include "gpu/models/onnx/onnx_compiler.h"
#include "gpu/models/onnx/onnx_fusion.h"
#include "gpu/models/onnx/onnx_model.h"
#include "gpu/precision.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::gpu::onnx {

struct EngineOptions {
  DType float_dtype = DType::kF32;  // kF16: fp16 storage, fp32 arithmetic
  // fp32 GEMMs and convolutions on tensor cores, each operand as two fp16 parts
  // (ops::GemmPath::kAutoSplitF32: ResNet-50's logits 6.5e-7 from PyTorch's fp32, the scalar path's
  // 1.8e-6; operands beyond ±65504 give NaN). Nothing changes in fp16 or on a device without
  // tensor cores.
  bool fp32_split = false;
  // Where convolutional stretches run channels-last (onnx_channels_last.h). kAuto: in fp16 on a
  // device with tensor cores (onnx_engine.cpp says what was measured).
  enum class Layout : uint8_t { kAuto, kNchw, kChannelsLast };
  Layout layout = Layout::kAuto;
  // Compiled graphs kept (one per set of input shapes, each holding its activations), the least
  // recently used dropped beyond: a client sending ever new shapes must not grow the process
  // without bound. The daemon raises it for a model with dynamic batching by the batch sizes it
  // compiles at load.
  size_t max_compiled_graphs = 8;
};

// The options of a precision (gpu/precision.h): fp32, fp32-split, and fp16 for both fp16 and
// fp16-heads (an ONNX graph has no heads).
EngineOptions engine_options(Precision precision);

// One input of run_on_device: its ONNX type and shape, and its values either on the host
// (`host.bytes`) or in a tensor already on this engine's device (`device`: a result of an earlier
// request, bound as it is when its dtype is the slot's, which chains models without a copy).
struct EngineInput {
  HostTensor host;
  std::optional<Tensor> device;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> load(Runtime& rt, const std::string& path, const EngineOptions& options = {});
  static Result<std::unique_ptr<Engine>> from_model(Runtime& rt, Model model, const EngineOptions& options = {});

  const Model& model() const { return model_; }
  // The inputs a caller provides, in order (dims of -1 are free).
  const std::vector<const ValueInfo*>& inputs() const { return inputs_; }

  // Runs the model on `inputs` (one per inputs(), of its type; free dims any size) and returns the
  // graph outputs in order.
  Result<std::vector<HostTensor>> run(std::span<const HostTensor> inputs);
  // The same, with the outputs left on the device (one tensor per graph output, in order; dtypes as
  // CompiledOutput says).
  Result<std::vector<Tensor>> run_on_device(std::span<const EngineInput> inputs);
  // The device tensors to bind to `graph`'s slots for these host inputs (converted to the slots'
  // dtypes and uploaded).
  Result<std::vector<Tensor>> upload_inputs(const CompiledGraph& graph, std::span<const HostTensor> inputs);
  // The compiled graph for these inputs (compiling it on first use); only the shapes of slot
  // inputs and the values of shape tensors (is_shape_tensor) matter.
  Result<CompiledGraph*> compiled(std::span<const HostTensor> inputs);
  // Whether runtime input i is a shape tensor: an integer input of at most kMaxShapeTensorElements
  // elements, or a floating or bool one as small that only parameters read (Resize's roi and
  // scales, Upsample's scales, Pad's constant, Range's bounds, OneHot's depth and values, Dropout's
  // ratio and training mode). Its value is compiled into the graph (as TensorRT treats
  // shape tensors), so Reshape, Slice, Expand, Resize, Range... may take shapes, axes, scales and
  // bounds as graph inputs.
  bool is_shape_tensor(size_t i) const;
  static constexpr int64_t kMaxShapeTensorElements = 64;
  size_t compiled_count() const { return compiled_.size(); }
  // What the load-time rewrites fused (onnx_fusion.h).
  const FusionCounts& fused() const { return fused_; }
  const ChannelsLastCounts& channels_last() const { return channels_last_; }

 private:
  Engine(Runtime& rt, Model model, const EngineOptions& options);
  // `device_held[i]`: input i's bytes are on the device, not in inputs[i].bytes.
  // One run: the graph it used and its outputs on the device (run and run_on_device).
  struct Execution {
    CompiledGraph* graph;
    std::vector<Tensor> outputs;
  };
  Result<Execution> execute(std::span<const EngineInput> inputs);
  Result<Tensor> upload_input(const HostTensor& input, const CompiledInput& slot);
  Status check_inputs(std::span<const HostTensor> inputs, const std::vector<bool>& device_held = {}) const;

  Runtime& rt_;
  Model model_;
  EngineOptions options_;
  std::vector<const ValueInfo*> inputs_;
  std::vector<bool> parameter_inputs_;  // per input: read only as a parameter (is_shape_tensor)
  FusionCounts fused_;
  ChannelsLastCounts channels_last_;
  DeviceWeights weights_;  // uploaded once, shared by every compiled graph
  // Keyed by the slot inputs' shapes and the shape tensors' bytes; at most
  // options_.max_compiled_graphs, the least recently used dropped first.
  using Key = std::vector<std::vector<int64_t>>;
  std::map<Key, std::unique_ptr<CompiledGraph>> compiled_;
  std::list<Key> recent_;  // most recently used first
};

}  // namespace recon::gpu::onnx
