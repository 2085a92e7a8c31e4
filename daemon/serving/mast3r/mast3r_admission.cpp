// Mast3rInstance::admit: a MASt3R model request is one pair — inputs image1 and image2, no
// parameters — which the scheduler may batch with other sessions' pairs of the same BatchKey.
#include "daemon/serving/mast3r/mast3r_instance.h"
#include "daemon/serving/model_request.h"

namespace recon::daemon {

Status Mast3rInstance::admit(ModelRequest request, Scheduler& scheduler) {
  auto pair = std::make_unique<PairInputs>();
  RECON_ASSIGN_OR_RETURN(pair->images[0], take_image(request, "image1"));
  RECON_ASSIGN_OR_RETURN(pair->images[1], take_image(request, "image2"));
  RECON_RETURN_IF_ERROR(check_no_other_inputs(request, "image1, image2"));
  RECON_RETURN_IF_ERROR(check_known_parameters(request.parameters, {}, model_label(request)));
  BatchWork work;
  const ImageSize& a = pair->images[0].target;
  const ImageSize& b = pair->images[1].target;
  work.key = BatchKey{request.model.name, a.to_string() + "," + b.to_string()};
  work.rule = request.pair_batching;
  work.run = &run_pair_batch;
  work.context = std::move(request.context);
  pair->outputs = std::move(request.outputs);
  pair->reservation = std::move(request.reservation);
  work.body = std::move(pair);
  return scheduler.submit(std::move(work));
}

}  // namespace recon::daemon
