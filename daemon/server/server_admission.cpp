// Server: what every inference verb checks on the I/O thread before its job is queued — a ready
// model of the right kind, the request's InferOptions against it, and its images.
#include "daemon/ipc/wire_convert.h"
#include "daemon/server/server.h"

namespace recon::daemon {

Result<ModelInfo> Server::ready_model(const std::string& name) const {
  std::optional<ModelInfo> seen;
  for (const auto& device : devices_) {
    auto info = device->model(name);
    if (!info) continue;
    if (info->state == ModelState::kReady) return *info;
    seen = info;
  }
  if (!seen) return not_found("model '" + name + "' is not loaded");
  if (seen->state == ModelState::kFailed) return unavailable("model '" + name + "' failed: " + seen->error);
  return unavailable("model '" + name + "' is " + model_state_name(seen->state));
}

Result<std::pair<ModelInfo, InferSettings>> Server::admit_inference(const char* verb, const flatbuffers::String* model,
                                                                    const char* kind, const wire::InferOptions* options,
                                                                    const ReplyTarget& target) const {
  const std::string name = model_name(model, kind);
  RECON_ASSIGN_OR_RETURN(ModelInfo info, ready_model(name));
  if (info.kind != kind) {
    return invalid_argument("model '" + name + "' is a " + info.kind + " model; " + verb + " needs a " + kind +
                            " model");
  }
  RECON_ASSIGN_OR_RETURN(InferSettings settings, infer_settings(options, info, options_.limits, target));
  return std::pair<ModelInfo, InferSettings>(std::move(info), std::move(settings));
}

Result<std::vector<PendingImage>> Server::accept_images(
    const char* verb, const flatbuffers::Vector<flatbuffers::Offset<wire::Image>>* images, const Session& session,
    const ImageRules& rules, uint32_t max_images) {
  const size_t count = images != nullptr ? images->size() : 0;
  if (count == 0) return invalid_argument(std::string(verb) + " has no images");
  if (count > max_images) {
    return invalid_argument(std::string(verb) + " has " + std::to_string(count) + " images; at most " +
                            std::to_string(max_images) + " per request");
  }
  std::vector<PendingImage> accepted;
  accepted.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const std::string which = "images[" + std::to_string(i) + "]";
    RECON_ASSIGN_OR_RETURN(PendingImage image,
                           accept_image(images->Get(i), which.c_str(), session.client, registry_, rules));
    accepted.push_back(std::move(image));
  }
  return accepted;
}

}  // namespace recon::daemon
