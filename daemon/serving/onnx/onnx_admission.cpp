// OnnxInstance::admit: an ONNX request sends every graph input by name (the model's signature,
// ModelInfo::inputs), each a tensor or one tensor of an earlier result of the session; no
// parameters. The work runs on a device where the model is ready — the one holding the results it
// reads, when it reads any.
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
  work.context = std::move(request.context);
  work.model = request.model.name;
  work.body = std::make_unique<OnnxWork>(std::move(inputs), std::move(request.outputs), std::move(request.reservation),
                                         request.model.name);
  return scheduler.submit(SoloWork(std::move(work)));
}

}  // namespace recon::daemon
