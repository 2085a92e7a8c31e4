// GpuWorker: EncodeRetrieval — copy out the images, run the backbone's encoder on all of them
// (Mast3rEngine::encode, one size), then the retrieval head on the tokens; the embeddings and
// local features stay on the device behind one handle, the candidate pairs go in the answer.
#include "daemon/server/gpu_worker.h"
#include "daemon/server/responses.h"

namespace recon::daemon {

void GpuWorker::run_encode_retrieval(RetrievalJob job) {
  const auto picked = SteadyClock::now();
  if (job.deadline && picked > *job.deadline) {
    answer_error(job.reply, unavailable("the request's deadline passed while it was queued"));
    return;
  }
  if (!store_.client_open(job.client)) return;
  gpu::Mast3rEngine* engine = device_.engine(job.backbone);
  RetrievalRunner* head = device_.retrieval(job.model);
  if (engine == nullptr || head == nullptr) {
    answer_error(job.reply, engine_missing(engine == nullptr ? job.backbone : job.model));
    return;
  }
  auto pixels = materialize_all(job.images, input_);
  if (!pixels.is_ok()) {
    answer_error(job.reply, pixels.status());
    return;
  }
  std::vector<gpu::ImageU8View> views;
  for (const ModelImage& image : *pixels) views.push_back(image.view());  // they point into *pixels
  const uint64_t input_ns = ns_between(picked, SteadyClock::now());
  const auto start = SteadyClock::now();
  auto tokens = engine->encode(views);
  auto retrieved = tokens.is_ok() ? head->run(*tokens, job.top_k) : Result<RetrievalAnswer>(tokens.status());
  const uint64_t compute_ns = ns_between(start, SteadyClock::now());
  if (!retrieved.is_ok()) {
    answer_error(job.reply, retrieved.status().with_context("retrieval"));
    return;
  }
  StoredResult result;
  result.device = device_.index();
  result.model = job.model;
  result.ttl_ms = job.ttl_ms;
  result.tensors = std::move(retrieved->tensors);
  RequestTimings& t = result.timings;
  t.queue_ns = ns_between(job.received, picked);
  t.input_ns = input_ns;
  t.compute_ns = compute_ns;
  t.batch_size = static_cast<uint32_t>(job.images.size());
  t.total_ns = ns_between(job.received, SteadyClock::now());
  const ReplyTarget reply = job.reply;
  auto handle = store_.insert(std::move(job.reservation), std::move(result));
  if (!handle.is_ok()) {
    answer_error(reply, handle.status());
    return;
  }
  metrics_.record_retrieval(job.images.size());
  answer(reply, encode_retrieval_response(reply.request_id, **handle, retrieved->pairs, retrieved->scores),
         StatusCode::kOk);
}

}  // namespace recon::daemon
