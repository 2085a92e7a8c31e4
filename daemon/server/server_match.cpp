// Server: admission of Match — the source handle must be one of this session's and hold
// desc_1/desc_2 (and desc_conf_* when a confidence threshold is asked for).
#include <cmath>

#include "daemon/ipc/wire_convert.h"
#include "daemon/server/server.h"

namespace recon::daemon {
namespace {

constexpr uint32_t kDefaultMatchSubsample = 8;  // the official fast_reciprocal_NNs subsample
constexpr uint32_t kMaxMatchSubsample = 256;

}  // namespace

Result<std::optional<std::vector<uint8_t>>> Server::on_match(const wire::Match& body, Session& session,
                                                             const ReplyTarget& target) {
  RECON_ASSIGN_OR_RETURN(std::shared_ptr<const StoredResult> source,
                         store_.find(session.client, from_wire(body.source())));
  const StoredTensor* desc = source->find("desc_1");
  if (desc == nullptr || source->find("desc_2") == nullptr) {
    return invalid_argument("handle " + source->id.to_string() +
                            " has no desc_1 and desc_2 to match (a MASt3R pair result that kept its descriptors)");
  }
  const uint32_t subsample = body.subsample() == 0 ? kDefaultMatchSubsample : body.subsample();
  const uint64_t smaller_side = desc->shape.size() >= 2 ? std::min(desc->shape[0], desc->shape[1]) : 0;
  if (subsample > kMaxMatchSubsample || subsample > smaller_side) {
    return invalid_argument("subsample " + std::to_string(subsample) + " leaves no seed pixel on a " +
                            std::to_string(smaller_side) + "-pixel side (at most " +
                            std::to_string(std::min<uint64_t>(smaller_side, kMaxMatchSubsample)) + ")");
  }
  const float min_confidence = body.min_confidence();
  if (!std::isfinite(min_confidence) || min_confidence < 0) {
    return invalid_argument("min_confidence must be a finite value ≥ 0");
  }
  if (min_confidence > 0 && (source->find("desc_conf_1") == nullptr || source->find("desc_conf_2") == nullptr)) {
    return invalid_argument("min_confidence needs desc_conf_1 and desc_conf_2, which handle " + source->id.to_string() +
                            " does not hold");
  }
  MatchWork job;
  job.context.reply = target;
  job.context.ttl_ms = static_cast<uint32_t>(options_.limits.handle_ttl.count());
  job.context.received = SteadyClock::now();
  job.device = source->device;
  job.max_matches =
      body.max_matches() == 0 ? options_.limits.max_matches : std::min(body.max_matches(), options_.limits.max_matches);
  job.subsample = subsample;
  job.min_confidence = min_confidence;
  job.source = std::move(source);
  RECON_ASSIGN_OR_RETURN(job.reservation, store_.reserve(session.client));
  RECON_RETURN_IF_ERROR(scheduler_->submit(SoloWork(std::move(job))));
  return std::optional<std::vector<uint8_t>>();
}

}  // namespace recon::daemon
