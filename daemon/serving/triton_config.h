// The subset of Triton's model configuration (`config.pbtxt`, protobuf text format) that recond
// honours, so that a Triton model repository of ONNX models loads as it is:
//
//   name: "resnet"                         must be the model directory's name when given
//   platform: "onnxruntime_onnx"           or backend: "onnxruntime" (kind onnx)
//   max_batch_size: 8                      > 0: dims below exclude the batch dimension
//   dynamic_batching { max_queue_delay_microseconds: 500  preferred_batch_size: [ 4, 8 ] }
//   instance_group [ { count: 1  kind: KIND_GPU } ]
//   input [ { name: "x"  data_type: TYPE_FP32  dims: [ 3, 224, 224 ] } ]
//   output [ { name: "y"  data_type: TYPE_FP32  dims: [ 1000 ] } ]
//
// Anything else (a field recond does not know or cannot honour: other platforms, KIND_CPU,
// several instances or chosen GPUs, sequence batching, ensembles) is an error naming the file
// and line, never silently ignored. preferred_batch_size becomes the batching rule's preferred
// sizes (daemon/serving/model.h). Pure parsing: no I/O beyond the text given.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/serving/model.h"
#include "gpu/status.h"

namespace recon::daemon {

struct TritonConfig {
  std::string name;
  std::string platform;  // "onnxruntime_onnx" when platform or backend named ONNX Runtime
  uint32_t max_batch_size = 0;
  bool dynamic_batching = false;
  std::chrono::microseconds max_queue_delay{0};
  std::vector<uint32_t> preferred_batch_sizes;
  std::vector<DeclaredTensor> inputs;
  std::vector<DeclaredTensor> outputs;
};

// Parses `text` (the contents of `file`, for messages). INVALID_ARGUMENT naming file:line for a
// syntax error, an unknown field or a value recond cannot honour.
Result<TritonConfig> parse_triton_config(std::string_view text, const std::string& file);

}  // namespace recon::daemon
