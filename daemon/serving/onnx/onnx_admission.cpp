// OnnxInstance::admit: an ONNX request sends every graph input by name (the model's signature,
// ModelInfo::inputs), each a tensor or one tensor of an earlier result of the session; no
// parameters. The work runs on a device where the model is ready — the one holding the results it
// reads, when it reads any. A model with dynamic batching (ModelInfo::batching) takes requests
// whose inputs are all tensors as BatchWork: their first dimension is their rows (the same in
// every input, at most max_batch_size), the rest of their shapes and their types the BatchKey.
#include "daemon/serving/device.h"
#include "daemon/serving/onnx/onnx_instance.h"

namespace recon::daemon {
namespace {

class OnnxWork final : public KindWork::Body {
 public:
  OnnxWork(std::vector<ModelInput> inputs, std::vector<std::string> outputs, HandleReservation reservation,
           std::string model)
      : inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        reservation_(std::move(reservation)),
        model_(std::move(model)) {}

  void run(RequestContext context, Device& device, const WorkerContext& worker) override {
    const Responder answer = worker.responder(context);
    OnnxInstance* instance = device.ready<OnnxInstance>(model_);
    if (instance == nullptr) {
      answer.fail(device.missing(model_));
      return;
    }
    instance->run(std::move(inputs_), outputs_, std::move(reservation_), model_, answer, worker);
  }

 private:
  std::vector<ModelInput> inputs_;  // in the graph's input order; they hold the region leases
  std::vector<std::string> outputs_;
  HandleReservation reservation_;
  std::string model_;
};

// Batchable: dynamic batching is on and every input is a tensor with the same first dimension.
// Returns the BatchWork's key shapes and rows, nullopt when the request runs on its own.
Result<std::optional<std::pair<std::string, uint32_t>>> batch_shape(const ModelRequest& request,
                                                                    const std::vector<ModelInput>& inputs) {
  const BatchRule& rule = request.model.batching;
  if (rule.max_rows <= 1) return std::optional<std::pair<std::string, uint32_t>>();
  std::string shapes;
  int64_t rows = -1;
  for (const ModelInput& input : inputs) {
    const auto* t = std::get_if<PendingTensor>(&input.value);
    if (t == nullptr) return std::optional<std::pair<std::string, uint32_t>>();  // reads a result: alone
    if (t->shape.empty() || (rows >= 0 && t->shape[0] != rows)) {
      return invalid_argument(model_label(request) + " batches its requests (max_batch_size " +
                              std::to_string(rule.max_rows) + "): every input's first dimension is the request's " +
                              "batch, the same in all; input '" + input.name + "' breaks that");
    }
    rows = t->shape[0];
    shapes += std::string(tensor_element_name(t->dtype)) + "[";
    for (size_t d = 1; d < t->shape.size(); ++d) shapes += std::to_string(t->shape[d]) + ",";
    shapes += "];";
  }
  if (rows > static_cast<int64_t>(rule.max_rows)) {
    return invalid_argument(model_label(request) + " takes at most " + std::to_string(rule.max_rows) +
                            " rows in one request (max_batch_size); this one has " + std::to_string(rows));
  }
  return std::optional(std::pair(shapes, static_cast<uint32_t>(rows)));
}

}  // namespace

Status OnnxInstance::admit(ModelRequest request, Scheduler& scheduler) {
  RECON_RETURN_IF_ERROR(check_known_parameters(request.parameters, {}, model_label(request)));
  KindWork work;
  std::vector<ModelInput> inputs;
  std::string reads;
  for (const std::string& name : request.model.inputs) reads += (reads.empty() ? "" : ", ") + name;
  for (const std::string& name : request.model.inputs) {
    RECON_ASSIGN_OR_RETURN(ModelInput input, take_input(request, name));
    if (std::holds_alternative<PendingImage>(input.value)) {
      return invalid_argument("input '" + name + "' of " + model_label(request) +
                              " is an image; ONNX models take tensors (TensorInput) or results (ResultRef)");
    }
    if (const auto* r = std::get_if<ResultInput>(&input.value)) {
      if (work.device && *work.device != r->result->device) {
        return invalid_argument(model_label(request) + " reads results held on two devices");
      }
      work.device = r->result->device;
    }
    inputs.push_back(std::move(input));
  }
  RECON_RETURN_IF_ERROR(check_no_other_inputs(request, reads));
  RECON_ASSIGN_OR_RETURN(auto batched, batch_shape(request, inputs));
  if (batched) {
    BatchWork rows;
    rows.context = std::move(request.context);
    rows.key = BatchKey{request.model.name, std::move(batched->first)};
    rows.rule = request.model.batching;
    rows.rows = batched->second;
    rows.run = &run_onnx_batch;
    auto body = std::make_unique<OnnxRows>();
    body->inputs = std::move(inputs);
    body->outputs = std::move(request.outputs);
    body->reservation = std::move(request.reservation);
    rows.body = std::move(body);
    return scheduler.submit(std::move(rows));
  }
  work.context = std::move(request.context);
  work.model = request.model.name;
  work.body = std::make_unique<OnnxWork>(std::move(inputs), std::move(request.outputs), std::move(request.reservation),
                                         request.model.name);
  return scheduler.submit(SoloWork(std::move(work)));
}

}  // namespace recon::daemon
