// WorkerContext helpers: see worker_context.h.
#include "daemon/serving/worker_context.h"

#include <utility>

namespace recon::daemon {

std::optional<PreparedImages> start_with_images(std::vector<PendingImage>& images, const WorkerContext& worker,
                                                const Responder& answer) {
  const auto picked = SteadyClock::now();
  if (!answer.may_start(picked)) return std::nullopt;
  auto pixels = materialize_all(images, worker.input);
  if (!pixels.is_ok()) {
    answer.fail(pixels.status());
    return std::nullopt;
  }
  PreparedImages prepared;
  prepared.pixels = std::move(pixels).value();
  for (const ModelImage& image : prepared.pixels) prepared.views.push_back(image.view());
  prepared.picked = picked;
  prepared.input_ns = ns_between(picked, SteadyClock::now());
  return prepared;
}

}  // namespace recon::daemon
