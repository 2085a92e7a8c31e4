// Compiles an ONNX graph for one set of input shapes into a recorded GPU graph: nodes in file
// order (ONNX requires topological order), each through its row of the op table; shape
// arithmetic folds on the host, everything else records dispatches; activations share memory by
// liveness (onnx_memory_plan.h). The result runs many times with new input tensors bound.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpu/graph.h"
#include "gpu/models/onnx/onnx_memory_plan.h"
#include "gpu/models/onnx/onnx_model.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::gpu::onnx {

struct CompiledInput {
  std::string name;
  ElemType type;  // the ONNX type the caller hands over
  Shape shape;
  DType dtype;  // what the bound device tensor holds
  Arg slot;
};

struct CompiledOutput {
  std::string name;
  ElemType type;  // the ONNX type of the output
  Shape shape;
  Tensor tensor;  // written by every run (device dtype: tensor.dtype())
};

struct CompiledGraph {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<MemoryPlan> memory;
  std::vector<CompiledInput> inputs;  // the slots, in runtime input order (shape tensors excluded)
  std::vector<CompiledOutput> outputs;
  size_t folded_nodes = 0;  // nodes evaluated on the host at compile time

  // Binds `inputs` (one per CompiledInput, its dtype and shape) and runs the graph to completion.
  Status run(std::span<const Tensor> inputs);
};

// The graph inputs a caller provides: graph inputs that are not initializers, in file order.
std::vector<const ValueInfo*> runtime_inputs(const Model& model);

// How one runtime input enters a compiled graph: a slot of this shape bound per run, or a value
// fixed at compile time (a shape tensor: its value decides shapes, so it is part of the graph).
struct InputSpec {
  Shape shape;
  const HostTensor* value = nullptr;
};

// `inputs[i]` describes runtime_inputs(model)[i]. `float_dtype` is the execution dtype of every
// floating tensor (kF32, or kF16 for fp16 storage with fp32 arithmetic).
Result<std::unique_ptr<CompiledGraph>> compile_graph(Runtime& rt, const Model& model,
                                                     const std::vector<InputSpec>& inputs, DType float_dtype);

}  // namespace recon::gpu::onnx
