// RetrievalInstance::admit: a retrieval request is the input list "images" (1 to the daemon's
// max_batch_images, all prepared to one size: the encoder runs them as one batch) and the
// parameter top_k (each image's top_k most similar others; fewer than the images).
#include <limits>

#include "daemon/serving/model_request.h"
#include "daemon/serving/retrieval/retrieval_instance.h"

namespace recon::daemon {

Status RetrievalInstance::admit(ModelRequest request, Scheduler& scheduler) {
  RECON_RETURN_IF_ERROR(check_known_parameters(request.parameters, {"top_k"}, model_label(request)));
  auto work = std::make_unique<RetrievalRequest>();
  RECON_ASSIGN_OR_RETURN(
      work->top_k, parameter_or<uint32_t>(request.parameters, "top_k", 0, 0, std::numeric_limits<uint32_t>::max()));
  RECON_ASSIGN_OR_RETURN(work->images, take_images(request, "images", 1, request.limits->max_batch_images));
  RECON_RETURN_IF_ERROR(check_no_other_inputs(request, "images"));
  const size_t count = work->images.size();
  if (work->top_k >= count && work->top_k > 0) {
    return invalid_argument("top_k " + std::to_string(work->top_k) + " needs more than " + std::to_string(count) +
                            " images (each image's top_k others)");
  }
  for (size_t i = 1; i < count; ++i) {
    if (!(work->images[i].target == work->images.front().target)) {
      return invalid_argument("images[" + std::to_string(i) + "] is prepared to " + work->images[i].target.to_string() +
                              ", images[0] to " + work->images.front().target.to_string() + ": " + request.verb +
                              " needs images of one size (set options.resolution)");
    }
  }
  work->model = request.model.name;
  work->backbone = request.model.backbone;
  work->reservation = std::move(request.reservation);
  KindWork item;
  item.context = std::move(request.context);
  item.model = request.model.name;
  item.body = std::move(work);
  return scheduler.submit(SoloWork(std::move(item)));
}

}  // namespace recon::daemon
