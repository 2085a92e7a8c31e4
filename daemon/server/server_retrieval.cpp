// Server: admission of EncodeRetrieval — a loaded retrieval head, images of one size (the
// encoder runs them as one batch), top_k below the image count, one handle reservation.
#include "daemon/ipc/wire_convert.h"
#include "daemon/server/infer_options.h"
#include "daemon/server/server.h"

namespace recon::daemon {

Result<std::optional<std::vector<uint8_t>>> Server::on_encode_retrieval(const wire::EncodeRetrieval& body,
                                                                        Session& session, const ReplyTarget& target) {
  const std::string model = model_name(body.model(), "retrieval");
  RECON_ASSIGN_OR_RETURN(const ModelInfo info, ready_model(model));
  if (info.kind != "retrieval") return invalid_argument("model '" + model + "' is not a retrieval model");
  if (body.options() != nullptr && body.options()->outputs() != nullptr && body.options()->outputs()->size() > 0) {
    return invalid_argument("EncodeRetrieval returns all of its outputs: leave options.outputs empty");
  }
  RECON_ASSIGN_OR_RETURN(InferSettings settings, infer_settings(body.options(), info, options_.limits));
  const size_t count = body.images() != nullptr ? body.images()->size() : 0;
  if (count == 0) return invalid_argument("EncodeRetrieval has no images");
  if (count > options_.limits.max_batch_images) {
    return invalid_argument("EncodeRetrieval has " + std::to_string(count) + " images; at most " +
                            std::to_string(options_.limits.max_batch_images) + " per request");
  }
  if (body.top_k() >= count && body.top_k() > 0) {
    return invalid_argument("top_k " + std::to_string(body.top_k()) + " needs more than " + std::to_string(count) +
                            " images (each image's top_k others)");
  }
  RetrievalJob job;
  job.reply = target;
  job.client = session.client;
  job.model = model;
  job.backbone = info.backbone;
  job.top_k = body.top_k();
  job.ttl_ms = settings.ttl_ms;
  job.received = settings.received;
  job.deadline = settings.deadline;
  for (uint32_t i = 0; i < count; ++i) {
    const std::string which = "images[" + std::to_string(i) + "]";
    RECON_ASSIGN_OR_RETURN(PendingImage image, accept_image(body.images()->Get(i), which.c_str(), session.client,
                                                            registry_, settings.rules));
    if (!job.images.empty() && !(image.target == job.images.front().target)) {
      return invalid_argument(which + " is prepared to " + image.target.to_string() + ", images[0] to " +
                              job.images.front().target.to_string() +
                              ": EncodeRetrieval needs images of one size (set options.resolution)");
    }
    job.images.push_back(std::move(image));
  }
  RECON_ASSIGN_OR_RETURN(job.reservation, store_.reserve(session.client));
  RECON_RETURN_IF_ERROR(scheduler_->submit(SoloJob(std::move(job))));
  return std::optional<std::vector<uint8_t>>();
}

}  // namespace recon::daemon
