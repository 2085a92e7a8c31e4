// ModelRepository: the models recond may load at run time (LoadModel, `reconctl load`), from one
// directory laid out like Triton's model repository:
//
//   <root>/<model>/model.conf          optional; the keys below
//   <root>/<model>/config.pbtxt        optional; Triton's model configuration (triton_config.h)
//   <root>/<model>/<version>/<weights> numbered versions (1, 2, ...); the highest unless one is asked
//   <root>/<model>/<weights>           or no version directories at all
//   <root>/<file>.safetensors          a weights file named directly (the form before the repository)
//
// model.conf holds `key = value` lines and '#' comments; an unknown key, a key given twice or a bad
// value is an error naming model.conf:line:
//   kind      = mast3r | retrieval      (default mast3r)
//   weights   = FILE                    (default: the one *.safetensors file of the version)
//   backbone  = MODEL                   (kind retrieval: the mast3r model whose encoder feeds it)
//   precision = fp32 | fp16 | fp16-heads (default: the daemon's)
//   max_batch_size = N                  (onnx) > 1: dynamic batching of up to N rows a call
//   max_queue_delay_us = N              (onnx) how long a batch's first request waits for more
//
// Nothing is cached: every lookup reads the directory, so a version dropped in is seen at once.
// Any thread.
#pragma once

#include <cstdint>
#include <string>

#include "daemon/serving/model.h"
#include "gpu/status.h"

namespace recon::daemon {

class ModelRepository {
 public:
  // "" = no repository: every lookup is refused.
  explicit ModelRepository(std::string root) : root_(std::move(root)) {}

  bool enabled() const { return !root_.empty(); }

  // What `entry` (relative to the root: a model directory or a weights file; no "..", not absolute)
  // holds, as the spec of a model called `name`. `version` 0 takes the highest; another must exist.
  // NOT_FOUND when the entry, the version or its weights file is missing; INVALID_ARGUMENT for a
  // path outside the root, a bad model.conf or a version directory without a single weights file.
  Result<ModelSpec> find(const std::string& entry, const std::string& name, uint32_t version) const;

 private:
  std::string root_;
};

}  // namespace recon::daemon
