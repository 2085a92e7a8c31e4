// PendingBatch: waits for an InferBatchResult and turns each of its handles into a Result.
#include "recon/client/batch.h"

#include "result_state.h"

namespace recon::client {

namespace detail {

BatchResult Decode::batch(std::shared_ptr<Call> call, std::shared_ptr<Core> core) {
  detail::Answer answer = call->take();
  const auto round_trip = call->answered_at - call->sent_at;
  detail::expect_body(answer, wire::ResponseBody::InferBatchResult, "InferBatch");
  const wire::InferBatchResult* body = answer.response->body_as_InferBatchResult();
  const size_t count = body->handles() != nullptr ? body->handles()->size() : 0;
  // Every handle the answer names is wrapped in a Result at once, so that any failure below
  // releases all of them (the wrapped ones through their destructors).
  BatchResult out;
  size_t wrapped = 0;
  try {
    for (; wrapped < count; ++wrapped) {
      out.results.push_back(Result(detail::ResultState::from_wire(core, body->handles()->Get(wrapped), round_trip)));
    }
    if (body->pairs() == nullptr || body->pairs()->size() != count) {
      throw Error(ErrorCode::kInternal, ErrorSource::kConnection,
                  "recond answered InferBatch with " + std::to_string(count) + " handles but a different pair count");
    }
    for (const wire::ImagePair* p : *body->pairs()) out.pairs.push_back(ImagePair{p->first(), p->second()});
  } catch (...) {
    // Handles before `wrapped` are released by their Results; the one from_wire failed on, by
    // from_wire itself.
    for (size_t k = wrapped + 1; k < count; ++k) {
      const wire::ResultHandle* handle = body->handles()->Get(k);
      if (handle != nullptr && handle->id() != nullptr) core->release_async(detail::from_wire(handle->id()));
    }
    throw;
  }
  return out;
}

}  // namespace detail
}  // namespace recon::client
