// Server: admission of InferBatch — everything is checked here, on the I/O thread, before the
// job is queued: the model, image and pair bounds, and one handle reservation per pair. Its answers
// are InferBatchResults (the renderer named here).

#include "daemon/ipc/wire_convert.h"
#include "daemon/server/infer_options.h"
#include "daemon/server/responses.h"
#include "daemon/server/server.h"
#include "daemon/serving/mast3r/mast3r_instance.h"

namespace recon::daemon {
namespace {

// The batch's pairs: the listed ones (or the consecutive ones), then, with `symmetric`, each
// one swapped — appended after all of them, as the official make_pairs(symmetrize=True) does.
Result<std::vector<gpu::ImagePair>> batch_pairs(const wire::InferBatch& body, size_t images, uint32_t max_pairs) {
  std::vector<gpu::ImagePair> pairs;
  if (body.pairs() == nullptr || body.pairs()->size() == 0) {
    if (images < 2) {
      return invalid_argument("InferBatch with one image and no pairs: the consecutive pairs need at least 2 images");
    }
    pairs = gpu::consecutive_pairs(images);
  } else {
    const size_t asked = body.pairs()->size() * (body.symmetric() ? 2 : 1);
    if (asked > max_pairs) {
      return invalid_argument("InferBatch asks for " + std::to_string(asked) + " pairs; at most " +
                              std::to_string(max_pairs) + " per request");
    }
    for (uint32_t k = 0; k < body.pairs()->size(); ++k) {
      const wire::ImagePair* p = body.pairs()->Get(k);
      if (p->first() >= images || p->second() >= images) {
        return invalid_argument("pairs[" + std::to_string(k) + "] = (" + std::to_string(p->first()) + ", " +
                                std::to_string(p->second()) + ") names an image beyond the " + std::to_string(images) +
                                " sent");
      }
      if (p->first() == p->second()) {
        return invalid_argument("pairs[" + std::to_string(k) + "] pairs image " + std::to_string(p->first()) +
                                " with itself");
      }
      pairs.push_back(gpu::ImagePair{static_cast<int32_t>(p->first()), static_cast<int32_t>(p->second())});
    }
  }
  if (body.symmetric()) {
    const size_t n = pairs.size();
    for (size_t k = 0; k < n; ++k) pairs.push_back(gpu::ImagePair{pairs[k].second, pairs[k].first});
  }
  if (pairs.size() > max_pairs) {
    return invalid_argument("InferBatch makes " + std::to_string(pairs.size()) + " pairs; at most " +
                            std::to_string(max_pairs) + " per request");
  }
  return pairs;
}

}  // namespace

Result<std::optional<std::vector<uint8_t>>> Server::on_infer_batch(const wire::InferBatch& body, Session& session,
                                                                   const ReplyTarget& target) {
  RECON_ASSIGN_OR_RETURN(auto admitted, admit_inference("InferBatch", body.model(), "mast3r", body.options(), target));
  auto& [model, settings] = admitted;
  auto job = std::make_unique<InferBatchRequest>();
  job->model = model.name;
  job->outputs = std::move(settings.outputs);
  job->stream = body.stream();
  RECON_ASSIGN_OR_RETURN(job->images, accept_images("InferBatch", body.images(), session, settings.rules,
                                                    options_.limits.max_batch_images));
  RECON_ASSIGN_OR_RETURN(job->pairs, batch_pairs(body, job->images.size(), options_.limits.max_batch_pairs));
  // One handle per pair, all reserved now: a batch that cannot hold all its results is refused
  // before it runs (the reservations taken so far are returned when `job` goes).
  job->reservations.reserve(job->pairs.size());
  for (size_t k = 0; k < job->pairs.size(); ++k) {
    auto reservation = store_.reserve(session.client);
    if (!reservation.is_ok()) {
      return reservation.status().with_context("the batch needs " + std::to_string(job->pairs.size()) +
                                               " result handles");
    }
    job->reservations.push_back(std::move(reservation).value());
  }
  KindWork item;
  item.context = std::move(settings.context);
  item.context.render_pairs = infer_batch_response;
  item.model = model.name;
  item.body = std::move(job);
  RECON_RETURN_IF_ERROR(scheduler_->submit(SoloWork(std::move(item))));
  return std::optional<std::vector<uint8_t>>();
}

}  // namespace recon::daemon
