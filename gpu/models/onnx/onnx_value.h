// A named tensor while an ONNX graph is compiled: known on the host (initializers, Constant
// outputs, folded shape arithmetic) or produced on the GPU (graph inputs, op outputs), or both once
// a host value has been uploaded. Floating tensors live on the device in one execution dtype.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "gpu/graph.h"
#include "gpu/models/onnx/onnx_model.h"
#include "gpu/tensor.h"

namespace recon::gpu::onnx {

struct Value {
  ElemType type = ElemType::kUndefined;  // the ONNX element type
  Shape shape;
  std::optional<HostTensor> host;  // the value, when known before any request
  std::optional<Arg> device;       // where it lives on the GPU
  // Index of the planner storage the device value occupies (a view shares its source's), or -1
  // for graph input slots and uploaded constants, which the planner never reuses.
  int storage = -1;
  // Device tensors a builder derived from this value, by derivation (ConvTranspose's flipped
  // kernel): made once and, for an initializer, shared by every graph the engine compiles.
  std::map<std::string, Arg> derived;

  bool is_host() const { return host.has_value(); }
};

// The device dtype of an ONNX element type under an execution dtype for floats; nullopt when the
// GPU cannot hold it (64-bit floats, strings, ...). Integers of up to 64 bits run as i32, and so do
// booleans (0 or 1; one byte each on the host, converted at the graph's edges like int64).
std::optional<DType> device_dtype(ElemType type, DType float_dtype);
bool is_floating(ElemType type);

}  // namespace recon::gpu::onnx
