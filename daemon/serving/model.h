// The nouns of a served model that every thread may read: what to load (ModelSpec, from the
// configuration, a LoadModel request or the model repository) and what is known about a loaded
// one (ModelInfo: a copy of the device's catalog entry, never an engine pointer).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/service/config_values.h"
#include "daemon/serving/image_size.h"
#include "gpu/precision.h"

namespace recon::daemon {

enum class ModelState { kLoading, kWarming, kReady, kFailed, kUnloading };
const char* model_state_name(ModelState state);

// How a model's requests share engine calls (Triton's max_batch_size and dynamic_batching): one
// call takes up to `max_rows` rows (MASt3R: pairs; onnx: the batch dimension of its inputs),
// the first request waits up to `max_wait` for more. `power_of_two`: only 1, 2, 4, ... rows and
// max_rows (MASt3R's recorded graphs); otherwise any sum up to max_rows. max_rows 1: no batching.
// `preferred` (Triton's preferred_batch_size, ascending, each <= max_rows): as soon as the queued
// rows fill one of them, the largest such batch goes without waiting.
struct BatchRule {
  uint32_t max_rows = 1;
  std::chrono::microseconds max_wait{0};
  bool power_of_two = true;
  std::vector<uint32_t> preferred;
  bool operator==(const BatchRule&) const = default;
};

// A tensor a model's config declares (Triton's input/output), checked against the model file at
// load: dims -1 = any; without the batch dimension when the config's max_batch_size > 0.
struct DeclaredTensor {
  std::string name;
  std::string data_type;  // "TYPE_FP32", ...; empty: not declared
  std::vector<int64_t> dims;
};

struct ModelSpec {
  std::string name;  // what requests call it
  std::string path;  // its weights file
  std::string kind = "mast3r";
  uint32_t version = 0;                     // the repository's version directory it came from (0: none)
  std::optional<gpu::Precision> precision;  // nullopt: the daemon's precision
  std::string backbone;                     // kind "retrieval": the mast3r model whose encoder feeds it
  std::optional<BatchRule> batching;        // the config's dynamic batching (kinds that allow it)
  // config.pbtxt's signature, when it has one; max_batch_size > 0: a batch dimension precedes dims.
  std::vector<DeclaredTensor> declared_inputs, declared_outputs;
  uint32_t max_batch_size = 0;
};

struct ModelInfo {
  std::string name;
  std::string kind;
  std::string path;
  uint32_t version = 0;
  std::string backbone;
  ModelState state = ModelState::kLoading;
  gpu::Precision precision = gpu::Precision::kF32;
  std::vector<ImageSize> resolutions;  // warmed (view 1 = view 2 = this size)
  uint64_t weight_bytes = 0;
  std::string error;  // why kFailed
  // What its requests may ask for: the names of the tensors a result of it holds (empty: any, the
  // kind decides), and the image sides it accepts (multiples of patch_size; default_long_side is the
  // official loader's "size", max(img_size); square_ok: square images stay square, as the official
  // loader keeps them for DUNE-MASt3R, instead of being cut to 4:3).
  std::vector<std::string> outputs;
  // The named inputs its requests send, for kinds whose inputs come from the model file (onnx);
  // empty for kinds with fixed inputs (ModelKind::inputs).
  std::vector<std::string> inputs;
  uint32_t patch_size = 16;
  uint32_t default_long_side = 512;
  bool square_ok = false;
  uint32_t desc_dim = 24;
  // How its requests share engine calls, when its kind decides per model (onnx: the config's
  // max_batch_size and dynamic_batching; max_rows 1 = each request alone).
  BatchRule batching;
};

}  // namespace recon::daemon
