// OnnxInstance: an ONNX model (gpu/models/onnx) loaded on one device, and how its requests run:
// the graph's inputs by name — tensors from the client's regions or inline, or tensors of earlier
// results that stay on the GPU — one compiled graph per set of input shapes, outputs stored on the
// device behind one handle. Worker thread only (model_instance.h). Requests run one at a time:
// batching several clients' requests along a batch axis is not done yet.
#pragma once

#include <memory>
#include <vector>

#include "daemon/server/worker_context.h"
#include "daemon/serving/model.h"
#include "daemon/serving/model_instance.h"
#include "daemon/serving/model_request.h"
#include "gpu/status.h"

namespace recon::gpu::onnx {
class Engine;
}

namespace recon::daemon {

class Device;

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

 private:
  OnnxInstance(std::unique_ptr<gpu::onnx::Engine> engine, uint64_t weight_bytes);
  std::unique_ptr<gpu::onnx::Engine> engine_;
  uint64_t weight_bytes_ = 0;
};

}  // namespace recon::daemon
