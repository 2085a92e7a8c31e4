// PendingBatch: waits for an InferBatchResult and turns each of its handles into a Result.
#include "recon/client/batch.h"

#include "result_state.h"

namespace recon::client {

PendingBatch::PendingBatch(std::shared_ptr<detail::Core> core, std::shared_ptr<detail::Call> call)
    : core_(std::move(core)), call_(std::move(call)) {}

PendingBatch& PendingBatch::operator=(PendingBatch&& other) noexcept {
  if (this != &other) {
    abandon();
    core_ = std::move(other.core_);
    call_ = std::move(other.call_);
  }
  return *this;
}

PendingBatch::~PendingBatch() {
  abandon();
}

void PendingBatch::abandon() noexcept {
  if (call_) call_->abandon();
  call_.reset();
  core_.reset();
}

bool PendingBatch::ready() const {
  return call_ && call_->ready();
}

bool PendingBatch::wait_for(std::chrono::milliseconds timeout) const {
  return call_ && call_->wait_for(timeout);
}

BatchResult PendingBatch::get() {
  if (!call_) throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient, "get() on an empty PendingBatch");
  std::shared_ptr<detail::Call> call = std::move(call_);
  std::shared_ptr<detail::Core> core = std::move(core_);
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
    for (size_t k = wrapped; k < count; ++k) {
      const wire::ResultHandle* handle = body->handles()->Get(k);
      if (handle != nullptr && handle->id() != nullptr) core->release_async(detail::from_wire(handle->id()));
    }
    throw;
  }
  return out;
}

}  // namespace recon::client
