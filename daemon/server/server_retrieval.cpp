// Server: admission of EncodeRetrieval — a loaded retrieval head, images of one size (the
// encoder runs them as one batch), top_k below the image count, one handle reservation.
#include "daemon/ipc/wire_convert.h"
#include "daemon/server/infer_options.h"
#include "daemon/server/server.h"

namespace recon::daemon {

Result<std::optional<std::vector<uint8_t>>> Server::on_encode_retrieval(const wire::EncodeRetrieval& body,
                                                                        Session& session, const ReplyTarget& target) {
  RECON_ASSIGN_OR_RETURN(auto admitted,
                         admit_inference("EncodeRetrieval", body.model(), "retrieval", body.options(), target));
  auto& [model, settings] = admitted;
  if (!settings.outputs.empty()) {
    return invalid_argument("EncodeRetrieval returns all of its outputs: leave options.outputs empty");
  }
  RetrievalWork job;
  job.context = std::move(settings.context);
  job.model = model.name;
  job.backbone = model.backbone;
  job.top_k = body.top_k();
  RECON_ASSIGN_OR_RETURN(job.images, accept_images("EncodeRetrieval", body.images(), session, settings.rules,
                                                   options_.limits.max_batch_images));
  const size_t count = job.images.size();
  if (body.top_k() >= count && body.top_k() > 0) {
    return invalid_argument("top_k " + std::to_string(body.top_k()) + " needs more than " + std::to_string(count) +
                            " images (each image's top_k others)");
  }
  for (size_t i = 1; i < count; ++i) {
    if (!(job.images[i].target == job.images.front().target)) {
      return invalid_argument("images[" + std::to_string(i) + "] is prepared to " + job.images[i].target.to_string() +
                              ", images[0] to " + job.images.front().target.to_string() +
                              ": EncodeRetrieval needs images of one size (set options.resolution)");
    }
  }
  RECON_ASSIGN_OR_RETURN(job.reservation, store_.reserve(session.client));
  RECON_RETURN_IF_ERROR(scheduler_->submit(SoloWork(std::move(job))));
  return std::optional<std::vector<uint8_t>>();
}

}  // namespace recon::daemon
