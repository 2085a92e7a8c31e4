// OnnxInstance: an ONNX model (gpu/models/onnx) loaded on one device, and how its requests run:
// the graph's inputs by name — tensors from the client's regions or inline, or tensors of earlier
// results that stay on the GPU — one compiled graph per set of input shapes, outputs stored on the
// device behind one handle. A model whose config asks for dynamic batching (max_batch_size > 1)
// runs the same-shaped requests of several clients as one call over their rows, each answered
// with its own rows. Worker thread only (model_instance.h).
#pragma once

#include <memory>
#include <vector>

#include "daemon/serving/model.h"
#include "daemon/serving/model_instance.h"
#include "daemon/serving/model_request.h"
#include "daemon/serving/worker_context.h"
#include "gpu/status.h"

namespace recon::gpu::onnx {
class Engine;
}

namespace recon::daemon {

class Device;

// A request of a model with dynamic batching, in its BatchWork (BatchWork::body): tensors whose
// first dimension is the request's rows.
struct OnnxRows final : BatchWork::Body {
  std::vector<ModelInput> inputs;  // in the graph's input order; they hold the region leases
  std::vector<std::string> outputs;
  HandleReservation reservation;
};

class OnnxInstance final : public ModelInstance {
 public:
  // ModelKind::load: the .onnx file at spec.path, checked as a whole (every node it cannot run
  // named), compiled at load when its input shapes are fixed; fp16 storage unless the precision
  // is fp32. `info` gets the graph's input and output names.
  static Result<std::unique_ptr<ModelInstance>> load(const ModelSpec& spec, Device& device, ModelInfo& info);
  // ModelKind::admit (onnx_admission.cpp): one input per graph input, by name.
  static Status admit(ModelRequest request, Scheduler& scheduler);
  ~OnnxInstance() override;

  uint64_t weight_bytes() const override { return weight_bytes_; }

  // Runs one request: `inputs` in the graph's input order; `outputs` the names to keep (empty: all).
  void run(std::vector<ModelInput> inputs, const std::vector<std::string>& outputs, HandleReservation reservation,
           const std::string& model, const Responder& answer, const WorkerContext& worker);
  // Runs requests of one BatchKey (OnnxRows) as one call: every input is their rows concatenated
  // along the first axis, padded to a power of two or max_rows (the batch sizes the load compiled);
  // each request gets its own rows of every output (views of one device buffer).
  void run_batch(std::vector<BatchWork> batch, const WorkerContext& worker);

 private:
  OnnxInstance(std::unique_ptr<gpu::onnx::Engine> engine, uint64_t weight_bytes);
  std::unique_ptr<gpu::onnx::Engine> engine_;
  uint64_t weight_bytes_ = 0;
};

// The worker's entry point for a batch (BatchWork::run): the ready instance of the batch's model
// runs it, or every request of it fails with the model's state.
void run_onnx_batch(std::vector<BatchWork> batch, Device& device, const WorkerContext& worker);

}  // namespace recon::daemon
