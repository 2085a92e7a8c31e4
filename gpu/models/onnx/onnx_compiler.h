// Compiles an ONNX graph for one set of input shapes into a recorded GPU graph: nodes in file
// order (ONNX requires topological order), each through its row of the op table; shape
// arithmetic folds on the host, everything else records dispatches; activations share memory by
// liveness (onnx_memory_plan.h). The result runs many times with new input tensors bound.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/graph.h"
#include "gpu/models/onnx/onnx_memory_plan.h"
#include "gpu/models/onnx/onnx_model.h"
#include "gpu/models/onnx/onnx_op_context.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::gpu::onnx {

// Inputs are bound as declared: f32 for float (cast on the GPU when the graph runs in fp16), f16
// for float16, i32 for integers.
struct CompiledInput {
  std::string name;
  ElemType type;  // the ONNX type the caller hands over
  Shape shape;
  DType dtype;  // what the bound device tensor holds
  Arg slot;
};

// Outputs are slots too: every run writes them into tensors the caller binds (and keeps: a
// daemon's result outlives the next run). Floats arrive as f32 (f16 for float16 outputs) whatever
// the execution dtype; integers as i32.
struct CompiledOutput {
  std::string name;
  ElemType type;  // the ONNX type of the output
  Shape shape;
  DType dtype;  // what the bound tensor must hold
  Arg slot;
};

struct CompiledGraph {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<MemoryPlan> memory;
  std::vector<CompiledInput> inputs;  // the slots, in runtime input order (shape tensors excluded)
  std::vector<CompiledOutput> outputs;
  size_t folded_nodes = 0;  // nodes evaluated on the host at compile time

  // Binds `inputs` and `outputs` (one per CompiledInput / CompiledOutput, of its dtype and shape)
  // and runs the graph to completion.
  Status run(std::span<const Tensor> inputs, std::span<const Tensor> outputs);
  // Fresh pooled tensors for the outputs of one run.
  Result<std::vector<Tensor>> new_outputs(Runtime& rt) const;
};

// The graph inputs a caller provides: graph inputs that are not initializers, in file order.
std::vector<const ValueInfo*> runtime_inputs(const Model& model);

// How one runtime input enters a compiled graph: a slot of this shape bound per run, or a value
// fixed at compile time (a shape tensor: its value decides shapes, so it is part of the graph).
struct InputSpec {
  Shape shape;
  const HostTensor* value = nullptr;
};

// The device copies of a model's initializers, by name, and of what builders derive from them
// (ConvTranspose's flipped kernel), by initializer and derivation (Value::derived).
struct DeviceWeights {
  std::map<std::string, Arg> uploaded;
  std::map<std::pair<std::string, std::string>, Arg> derived;
};

// `inputs[i]` describes runtime_inputs(model)[i]; `arithmetic` says how the graph computes.
// Initializers found in `weights` are bound as they are, and those the compile uploads join it once
// the compile has succeeded (a failed one gives every byte back): the graphs an engine compiles for
// its shapes share one copy of the model's weights.
Result<std::unique_ptr<CompiledGraph>> compile_graph(Runtime& rt, const Model& model,
                                                     const std::vector<InputSpec>& inputs, const Arithmetic& arithmetic,
                                                     DeviceWeights* weights = nullptr);

}  // namespace recon::gpu::onnx
