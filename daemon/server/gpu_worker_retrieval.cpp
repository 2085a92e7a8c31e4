// GpuWorker: EncodeRetrieval — copy out the images, run the backbone's encoder on all of them
// (Mast3rEngine::encode, one size), then the retrieval head on the tokens; the embeddings and
// local features stay on the device behind one handle, the candidate pairs go in the answer.
#include "daemon/server/gpu_worker.h"
#include "daemon/server/responses.h"

namespace recon::daemon {

void GpuWorker::run_encode_retrieval(RetrievalJob job) {
  const Responder answer = responder(job.context);
  const auto picked = SteadyClock::now();
  if (!answer.may_start(picked)) return;
  gpu::Mast3rEngine* engine = device_.engine(job.backbone);
  RetrievalRunner* head = device_.retrieval(job.model);
  if (engine == nullptr || head == nullptr) {
    answer.fail(engine_missing(engine == nullptr ? job.backbone : job.model));
    return;
  }
  auto pixels = materialize_all(job.images, input_);
  if (!pixels.is_ok()) {
    answer.fail(pixels.status());
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
    answer.fail(retrieved.status().with_context("retrieval"));
    return;
  }
  const StageTimes times{picked, input_ns, compute_ns, static_cast<uint32_t>(job.images.size()), SteadyClock::now()};
  auto handle = answer.store(std::move(job.reservation), job.model, std::move(retrieved->tensors), times);
  if (!handle.is_ok()) {
    answer.fail(handle.status());
    return;
  }
  metrics_.record_retrieval(job.images.size());
  answer.finish(encode_retrieval_response(answer.request_id(), **handle, retrieved->pairs, retrieved->scores));
}

}  // namespace recon::daemon
