// Server: requests for one result of a model. The generic Infer (named inputs, parameters) and
// the released verbs, now adapters onto it (InferPair, EncodeRetrieval, Match), each build one
// ModelRequest; submit_model_request hands it to its kind's admission (ModelKind::admit) and the
// work that makes to the scheduler. Which answer body the client gets is the verb's renderer.
#include <algorithm>
#include <map>

#include "daemon/ipc/wire_convert.h"
#include "daemon/server/infer_options.h"
#include "daemon/server/responses.h"
#include "daemon/server/server.h"
#include "daemon/serving/model_kind.h"

namespace recon::daemon {
namespace {

ModelRequest model_request(const char* verb, ModelInfo model, InferSettings settings, AnswerRenderer render,
                           const ServerLimits& limits) {
  ModelRequest request;
  request.verb = verb;
  request.context = std::move(settings.context);
  request.context.render = render;
  request.model = std::move(model);
  request.outputs = std::move(settings.outputs);
  request.limits = &limits;
  return request;
}

ModelInput image_input(std::string name, PendingImage image) {
  return ModelInput{std::move(name), std::move(image)};
}

}  // namespace

Result<ModelInfo> Server::infer_model(const std::string& name) const {
  auto ready = ready_model(name);
  if (ready.is_ok() || ready.status().code() != StatusCode::kNotFound) return ready;
  // A built-in kind (match) is served under its own name on every device.
  const ModelKind* kind = find_model_kind(name);
  if (kind == nullptr || !kind->built_in) return ready;
  ModelInfo info;
  info.name = name;
  info.kind = name;
  info.state = ModelState::kReady;
  return info;
}

Status Server::submit_model_request(ModelRequest request) {
  const ModelKind* kind = find_model_kind(request.model.kind);
  if (kind == nullptr || kind->admit == nullptr) {
    return unimplemented(model_label(request) + " serves no requests of its own");
  }
  request.pair_batching = BatchRule{std::max<uint32_t>(1, options_.batching.max_batch), options_.batching.max_wait};
  return kind->admit(std::move(request), *scheduler_);
}

Result<std::optional<std::vector<uint8_t>>> Server::on_infer(const wire::Infer& body, Session& session,
                                                             const ReplyTarget& target) {
  const std::string name = body.model()->str();  // present: required_fields.cpp
  if (name.empty()) return invalid_argument("Infer names no model");
  RECON_ASSIGN_OR_RETURN(ModelInfo model, infer_model(name));
  RECON_ASSIGN_OR_RETURN(InferSettings settings, infer_settings(body.options(), model, options_.limits, target));
  const ImageRules rules = settings.rules;
  ModelRequest request =
      model_request("Infer", std::move(model), std::move(settings), &infer_response, options_.limits);
  RECON_ASSIGN_OR_RETURN(request.parameters, request_parameters(body.parameters(), "Infer"));

  const auto* inputs = body.inputs();
  const size_t count = inputs != nullptr ? inputs->size() : 0;
  // Bounded before any region is leased: the largest input list a kind takes is an image batch.
  if (count > options_.limits.max_batch_images) {
    return invalid_argument("Infer has " + std::to_string(count) + " inputs; at most " +
                            std::to_string(options_.limits.max_batch_images) + " per request");
  }
  std::map<std::string, size_t> seen;  // how often each name came so far: a repeated name is a list
  std::map<std::string, size_t> total;
  for (size_t i = 0; i < count; ++i) ++total[inputs->Get(i)->name()->str()];
  for (size_t i = 0; i < count; ++i) {
    const wire::NamedInput* input = inputs->Get(i);
    const std::string input_name = input->name()->str();  // present: required_fields.cpp
    const size_t index = seen[input_name]++;
    const std::string label = total[input_name] > 1 ? input_name + "[" + std::to_string(index) + "]" : input_name;
    if (const wire::Image* image = input->source_as_Image()) {
      RECON_ASSIGN_OR_RETURN(PendingImage accepted,
                             accept_image(image, label.c_str(), session.client, registry_, rules));
      request.inputs.push_back(image_input(input_name, std::move(accepted)));
    } else if (const wire::ResultRef* ref = input->source_as_ResultRef()) {
      RECON_ASSIGN_OR_RETURN(std::shared_ptr<const StoredResult> result,
                             store_.find(session.client, from_wire(ref->handle())));
      std::string tensor = ref->tensor() != nullptr ? ref->tensor()->str() : std::string();
      if (!tensor.empty() && result->find(tensor) == nullptr) {
        return invalid_argument("input '" + label + "': handle " + result->id.to_string() + " has no tensor '" +
                                tensor + "'");
      }
      request.inputs.push_back(ModelInput{input_name, ResultInput{std::move(result), std::move(tensor)}});
    } else if (const wire::TensorInput* tensor = input->source_as_TensorInput()) {
      TensorRules tensor_rules;
      tensor_rules.max_inline_bytes = rules.max_inline_bytes;
      RECON_ASSIGN_OR_RETURN(PendingTensor accepted,
                             accept_tensor(tensor, "input '" + label + "'", session.client, registry_, tensor_rules));
      request.inputs.push_back(ModelInput{input_name, std::move(accepted)});
    } else {
      return unimplemented("input '" + label + "' has a source this daemon does not know");
    }
  }
  RECON_ASSIGN_OR_RETURN(request.reservation, store_.reserve(session.client));
  RECON_RETURN_IF_ERROR(submit_model_request(std::move(request)));
  return std::optional<std::vector<uint8_t>>();
}

Result<std::optional<std::vector<uint8_t>>> Server::on_infer_pair(const wire::InferPair& body, Session& session,
                                                                  const ReplyTarget& target) {
  RECON_ASSIGN_OR_RETURN(auto admitted, admit_inference("InferPair", body.model(), "mast3r", body.options(), target));
  auto& [model, settings] = admitted;
  const ImageRules rules = settings.rules;
  ModelRequest request =
      model_request("InferPair", std::move(model), std::move(settings), &infer_pair_response, options_.limits);
  RECON_ASSIGN_OR_RETURN(PendingImage image1, accept_image(body.image1(), "image1", session.client, registry_, rules));
  RECON_ASSIGN_OR_RETURN(PendingImage image2, accept_image(body.image2(), "image2", session.client, registry_, rules));
  request.inputs.push_back(image_input("image1", std::move(image1)));
  request.inputs.push_back(image_input("image2", std::move(image2)));
  RECON_ASSIGN_OR_RETURN(request.reservation, store_.reserve(session.client));
  RECON_RETURN_IF_ERROR(submit_model_request(std::move(request)));
  return std::optional<std::vector<uint8_t>>();
}

Result<std::optional<std::vector<uint8_t>>> Server::on_encode_retrieval(const wire::EncodeRetrieval& body,
                                                                        Session& session, const ReplyTarget& target) {
  RECON_ASSIGN_OR_RETURN(auto admitted,
                         admit_inference("EncodeRetrieval", body.model(), "retrieval", body.options(), target));
  auto& [model, settings] = admitted;
  const ImageRules rules = settings.rules;
  ModelRequest request = model_request("EncodeRetrieval", std::move(model), std::move(settings),
                                       &encode_retrieval_response, options_.limits);
  RECON_ASSIGN_OR_RETURN(std::vector<PendingImage> images, accept_images("EncodeRetrieval", body.images(), session,
                                                                         rules, options_.limits.max_batch_images));
  for (PendingImage& image : images) request.inputs.push_back(image_input("images", std::move(image)));
  if (body.top_k() > 0) request.parameters["top_k"] = std::to_string(body.top_k());
  RECON_ASSIGN_OR_RETURN(request.reservation, store_.reserve(session.client));
  RECON_RETURN_IF_ERROR(submit_model_request(std::move(request)));
  return std::optional<std::vector<uint8_t>>();
}

Result<std::optional<std::vector<uint8_t>>> Server::on_match(const wire::Match& body, Session& session,
                                                             const ReplyTarget& target) {
  RECON_ASSIGN_OR_RETURN(std::shared_ptr<const StoredResult> source,
                         store_.find(session.client, from_wire(body.source())));
  RECON_ASSIGN_OR_RETURN(ModelInfo model, infer_model("match"));
  // Match has no InferOptions: the daemon's handle TTL, no deadline.
  InferSettings settings;
  settings.context.reply = target;
  settings.context.ttl_ms = static_cast<uint32_t>(options_.limits.handle_ttl.count());
  settings.context.received = SteadyClock::now();
  ModelRequest request =
      model_request("Match", std::move(model), std::move(settings), &match_response, options_.limits);
  request.inputs.push_back(ModelInput{"pair", ResultInput{std::move(source), {}}});
  if (body.max_matches() > 0) request.parameters["max_matches"] = std::to_string(body.max_matches());
  if (body.subsample() > 0) request.parameters["subsample"] = std::to_string(body.subsample());
  if (body.min_confidence() != 0) request.parameters["min_confidence"] = parameter_text(body.min_confidence());
  RECON_ASSIGN_OR_RETURN(request.reservation, store_.reserve(session.client));
  RECON_RETURN_IF_ERROR(submit_model_request(std::move(request)));
  return std::optional<std::vector<uint8_t>>();
}

}  // namespace recon::daemon
