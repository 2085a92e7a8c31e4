// Job: see recon/client/job.h.
#include "recon/client/job.h"

#include "call.h"
#include "core.h"
#include "result_state.h"

namespace recon::client {

Job::Job() = default;
Job::Job(Job&&) noexcept = default;

Job& Job::operator=(Job&& other) noexcept {
  if (this != &other) {
    Job dropped(std::move(*this));  // cancels what this held
    core_ = std::move(other.core_);
    call_ = std::move(other.call_);
    request_id_ = other.request_id_;
    finished_ = other.finished_;
    result_ = std::move(other.result_);
  }
  return *this;
}

Job::~Job() {
  if (call_ == nullptr || finished_) return;
  cancel();
  call_->abandon();  // a result that still arrives is released by the orphan handler
}

Job::Job(std::shared_ptr<detail::Core> core, std::shared_ptr<detail::Call> call, uint64_t request_id)
    : core_(std::move(core)), call_(std::move(call)), request_id_(request_id) {}

std::optional<JobEvent> Job::next() {
  if (call_ == nullptr) throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient, "next() on an empty Job");
  if (finished_) return std::nullopt;
  detail::Answer answer;
  try {
    answer = call_->take();
    detail::expect_body(answer, wire::ResponseBody::JobEvent, "StartJob");
  } catch (const Error&) {
    finished_ = true;
    throw;
  }
  const wire::JobEvent* event = answer.response->body_as_JobEvent();
  if (answer.response->final()) {
    finished_ = true;
    if (event->result() == nullptr) {
      throw Error(ErrorCode::kInternal, ErrorSource::kConnection, "the job's final event carries no result");
    }
    result_.emplace(
        Result(detail::ResultState::from_wire(core_, event->result(), call_->answered_at - call_->sent_at)));
    return std::nullopt;
  }
  JobEvent out;
  out.stage = event->stage() != nullptr ? event->stage()->str() : std::string();
  out.done = event->done();
  out.total = event->total();
  out.loss = event->loss();
  out.message = event->message() != nullptr ? event->message()->str() : std::string();
  out.elapsed = std::chrono::milliseconds(event->elapsed_ms());
  return out;
}

Result& Job::result() {
  if (!result_) throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient, "the job has not finished");
  return *result_;
}

void Job::cancel() {
  if (core_ == nullptr || finished_) return;
  try {
    flatbuffers::FlatBufferBuilder builder(64);
    const auto body = wire::CreateCancelJob(builder, request_id_);
    const uint64_t request_id = core_->next_request_id();
    detail::finish_request(builder, request_id, core_->session(), wire::RequestBody::CancelJob, body.Union());
    (void)core_->start(detail::Target::kClient, builder, request_id, {});
  } catch (const Error&) {  // the connection is gone: the daemon ends the job with the session
  }
}

}  // namespace recon::client
