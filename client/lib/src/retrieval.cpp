// PendingRetrieval: waits for an EncodeRetrievalResult and wraps its handle in a Result.
#include "recon/client/retrieval.h"

#include "result_state.h"

namespace recon::client {

namespace detail {

RetrievalResult Decode::retrieval(std::shared_ptr<Call> call, std::shared_ptr<Core> core) {
  detail::Answer answer = call->take();
  const auto round_trip = call->answered_at - call->sent_at;
  detail::expect_body(answer, wire::ResponseBody::EncodeRetrievalResult, "EncodeRetrieval");
  const wire::EncodeRetrievalResult* body = answer.response->body_as_EncodeRetrievalResult();
  const wire::ResultHandle* handle = body->handle();
  RetrievalResult out;
  out.outputs = Result(detail::ResultState::from_wire(core, handle, round_trip));  // releases it on failure
  const size_t pairs = body->pairs() != nullptr ? body->pairs()->size() : 0;
  const size_t scores = body->scores() != nullptr ? body->scores()->size() : 0;
  if (pairs != scores) {
    throw Error(ErrorCode::kInternal, ErrorSource::kConnection,
                "recond answered EncodeRetrieval with " + std::to_string(pairs) + " pairs but " +
                    std::to_string(scores) + " scores");
  }
  for (size_t i = 0; i < pairs; ++i) {
    out.pairs.push_back(ImagePair{body->pairs()->Get(i)->first(), body->pairs()->Get(i)->second()});
    out.scores.push_back(body->scores()->Get(i));
  }
  return out;
}

}  // namespace detail
}  // namespace recon::client
