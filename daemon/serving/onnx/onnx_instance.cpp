// OnnxInstance: see onnx_instance.h.
#include "daemon/serving/onnx/onnx_instance.h"

#include <filesystem>

#include "daemon/serving/device.h"
#include "daemon/serving/stored_from_host.h"
#include "gpu/models/onnx/onnx_engine.h"

namespace recon::daemon {
namespace {

namespace onnx = gpu::onnx;

onnx::ElemType element_type(TensorElement e) {
  switch (e) {
    case TensorElement::kF32:
      return onnx::ElemType::kFloat;
    case TensorElement::kF16:
      return onnx::ElemType::kFloat16;
    case TensorElement::kU8:
      return onnx::ElemType::kUint8;
    case TensorElement::kI32:
      return onnx::ElemType::kInt32;
    case TensorElement::kI64:
      return onnx::ElemType::kInt64;
  }
  return onnx::ElemType::kUndefined;
}

// One request input as the engine takes it: a client tensor read where it lies (the work item
// holds its lease), or a tensor of an earlier result on this device.
Result<onnx::EngineInput> engine_input(const ModelInput& input, const onnx::ValueInfo& declared) {
  onnx::EngineInput out;
  out.host.name = input.name;
  if (const auto* t = std::get_if<PendingTensor>(&input.value)) {
    out.host.type = element_type(t->dtype);
    out.host.dims = t->shape;
    out.host.bytes = t->bytes();
    return out;
  }
  const auto* r = std::get_if<ResultInput>(&input.value);
  if (r == nullptr) return invalid_argument("input '" + input.name + "' is an image; ONNX models take tensors");
  const StoredTensor* stored = r->tensor.empty() ? nullptr : r->result->find(r->tensor);
  if (stored == nullptr || !stored->tensor.defined()) {
    return invalid_argument("input '" + input.name + "' must name one tensor of its result (ResultRef.tensor)");
  }
  // The stored tensor's values are those of the declared type: floats in f32 or f16, integers in
  // i32, as this engine's outputs hold them.
  out.host.type = declared.type;
  out.host.dims.assign(stored->shape.begin(), stored->shape.end());
  out.device = stored->tensor;
  return out;
}

}  // namespace

Result<std::unique_ptr<ModelInstance>> OnnxInstance::load(const ModelSpec& spec, Device& device, ModelInfo& info) {
  onnx::EngineOptions options;
  options.float_dtype = info.precision == gpu::Precision::kF32 ? gpu::DType::kF32 : gpu::DType::kF16;
  RECON_ASSIGN_OR_RETURN(std::unique_ptr<onnx::Engine> engine,
                         onnx::Engine::load(device.runtime(), spec.path, options));
  for (const onnx::ValueInfo* in : engine->inputs()) info.inputs.push_back(in->name);
  for (const onnx::ValueInfo& out : engine->model().graph.outputs) info.outputs.push_back(out.name);
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(spec.path, ec);
  info.weight_bytes = ec ? 0 : bytes;
  return std::unique_ptr<ModelInstance>(new OnnxInstance(std::move(engine), info.weight_bytes));
}

OnnxInstance::OnnxInstance(std::unique_ptr<onnx::Engine> engine, uint64_t weight_bytes)
    : engine_(std::move(engine)), weight_bytes_(weight_bytes) {}

OnnxInstance::~OnnxInstance() = default;

void OnnxInstance::run(std::vector<ModelInput> inputs, const std::vector<std::string>& outputs,
                       HandleReservation reservation, const std::string& model, const Responder& answer,
                       const WorkerContext& worker) {
  const auto picked = SteadyClock::now();
  if (!answer.may_start(picked)) return;
  std::vector<onnx::EngineInput> engine_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto in = engine_input(inputs[i], *engine_->inputs()[i]);
    if (!in.is_ok()) {
      answer.fail(in.status());
      return;
    }
    engine_inputs.push_back(std::move(*in));
  }
  const auto start = SteadyClock::now();
  auto results = engine_->run_on_device(engine_inputs);
  const uint64_t compute_ns = ns_between(start, SteadyClock::now());
  if (!results.is_ok()) {
    answer.fail(results.status().with_context(model));
    return;
  }
  std::vector<StoredTensor> tensors;
  const auto& names = engine_->model().graph.outputs;
  for (size_t i = 0; i < results->size(); ++i) {
    if (!outputs.empty() && std::find(outputs.begin(), outputs.end(), names[i].name) == outputs.end()) continue;
    tensors.push_back(stored_tensor(names[i].name, std::move((*results)[i])));
  }
  const StageTimes times{picked, ns_between(picked, start), compute_ns, 1, SteadyClock::now()};
  auto handle = answer.store(std::move(reservation), model, std::move(tensors), times);
  if (!handle.is_ok()) {
    answer.fail(handle.status());
    return;
  }
  worker.metrics.record_execution(1);
  answer.finish(ModelAnswer{**handle});
}

}  // namespace recon::daemon
