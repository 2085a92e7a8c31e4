// Mast3rInstance::admit: a MASt3R model request is one pair — inputs image1 and image2, no
// parameters — which the scheduler may batch with other sessions' pairs of the same BatchKey.
#include "daemon/serving/mast3r/mast3r_instance.h"
#include "daemon/serving/model_request.h"

namespace recon::daemon {

Status Mast3rInstance::admit(ModelRequest request, Scheduler& scheduler) {
  PairWork work;
  RECON_ASSIGN_OR_RETURN(work.images[0], take_image(request, "image1"));
  RECON_ASSIGN_OR_RETURN(work.images[1], take_image(request, "image2"));
  RECON_RETURN_IF_ERROR(check_no_other_inputs(request, "image1, image2"));
  RECON_RETURN_IF_ERROR(check_known_parameters(request.parameters, {}, model_label(request)));
  work.key = BatchKey{request.model.name, work.images[0].target, work.images[1].target};
  work.context = std::move(request.context);
  work.outputs = std::move(request.outputs);
  work.reservation = std::move(request.reservation);
  return scheduler.submit(std::move(work));
}

}  // namespace recon::daemon
