// MatchInstance::admit: a match request is the input "pair" — a whole result of the same session
// holding desc_1 and desc_2 (a MASt3R pair that kept its descriptors; desc_conf_* too for a
// confidence threshold) — and the parameters max_matches (0: the daemon's cap), subsample (the
// seed grid's step, default 8 as the official fast_reciprocal_NNs) and min_confidence. It runs on
// the device that holds the pair.
#include <algorithm>
#include <limits>

#include "daemon/serving/match/match_instance.h"
#include "daemon/serving/model_request.h"

namespace recon::daemon {
namespace {

constexpr uint32_t kDefaultMatchSubsample = 8;
constexpr uint32_t kMaxMatchSubsample = 256;
constexpr uint32_t kAnyUint = std::numeric_limits<uint32_t>::max();

}  // namespace

Status MatchInstance::admit(ModelRequest request, Scheduler& scheduler) {
  RECON_RETURN_IF_ERROR(
      check_known_parameters(request.parameters, {"max_matches", "subsample", "min_confidence"}, model_label(request)));
  RECON_ASSIGN_OR_RETURN(ResultInput pair, take_result(request, "pair"));
  RECON_RETURN_IF_ERROR(check_no_other_inputs(request, "pair"));
  if (!pair.tensor.empty()) {
    return invalid_argument("input 'pair' of " + model_label(request) +
                            " is a whole result: leave its ResultRef.tensor empty");
  }
  const StoredResult& source = *pair.result;
  const StoredTensor* desc = source.find("desc_1");
  if (desc == nullptr || source.find("desc_2") == nullptr) {
    return invalid_argument("handle " + source.id.to_string() +
                            " has no desc_1 and desc_2 to match (a MASt3R pair result that kept its descriptors)");
  }
  RECON_ASSIGN_OR_RETURN(uint32_t subsample, parameter_or<uint32_t>(request.parameters, "subsample", 0, 0, kAnyUint));
  if (subsample == 0) subsample = kDefaultMatchSubsample;
  const uint64_t smaller_side = desc->shape.size() >= 2 ? std::min(desc->shape[0], desc->shape[1]) : 0;
  if (subsample > kMaxMatchSubsample || subsample > smaller_side) {
    return invalid_argument("subsample " + std::to_string(subsample) + " leaves no seed pixel on a " +
                            std::to_string(smaller_side) + "-pixel side (at most " +
                            std::to_string(std::min<uint64_t>(smaller_side, kMaxMatchSubsample)) + ")");
  }
  float min_confidence = 0;
  if (auto it = request.parameters.find("min_confidence"); it != request.parameters.end()) {
    auto parsed = parameter_number<float>(it->first, it->second, 0.0f, std::numeric_limits<float>::max());
    if (!parsed.is_ok()) return invalid_argument("min_confidence must be a finite value ≥ 0, got " + it->second);
    min_confidence = *parsed;
  }
  if (min_confidence > 0 && (source.find("desc_conf_1") == nullptr || source.find("desc_conf_2") == nullptr)) {
    return invalid_argument("min_confidence needs desc_conf_1 and desc_conf_2, which handle " + source.id.to_string() +
                            " does not hold");
  }
  RECON_ASSIGN_OR_RETURN(const uint32_t max_matches,
                         parameter_or<uint32_t>(request.parameters, "max_matches", 0, 0, kAnyUint));
  auto work = std::make_unique<MatchRequest>();
  work->max_matches =
      max_matches == 0 ? request.limits->max_matches : std::min(max_matches, request.limits->max_matches);
  work->subsample = subsample;
  work->min_confidence = min_confidence;
  work->source = std::move(pair.result);
  work->reservation = std::move(request.reservation);
  KindWork item;
  item.context = std::move(request.context);
  item.model = request.model.name;
  item.device = work->source->device;
  item.body = std::move(work);
  return scheduler.submit(SoloWork(std::move(item)));
}

}  // namespace recon::daemon
