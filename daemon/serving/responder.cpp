// Responder: see responder.h.
#include "daemon/serving/responder.h"

#include <utility>

#include "daemon/serving/metrics.h"
#include "gpu/log.h"

namespace recon::daemon {

std::vector<LogField> request_log_fields(const ReplyTarget& target) {
  std::vector<LogField> fields{{std::string(kFieldRequestId), std::to_string(target.request_id)}};
  if (target.peer_pid != 0) fields.push_back({std::string(kFieldClientPid), std::to_string(target.peer_pid)});
  return fields;
}

namespace {

LogLevel level_for(StatusCode code) {
  switch (code) {
    case StatusCode::kInternal:
    case StatusCode::kDataLoss:
    case StatusCode::kResourceExhausted:
      return LogLevel::kWarning;
    default:
      return LogLevel::kDebug;
  }
}

}  // namespace

bool Responder::may_start(SteadyClock::time_point picked) const {
  if (context_.deadline && picked > *context_.deadline) {
    fail(unavailable("the request's deadline passed while it was queued"));
    return false;
  }
  return sinks_.store.client_open(context_.client());
}

Result<std::shared_ptr<const StoredResult>> Responder::store(HandleReservation reservation, std::string model,
                                                             std::vector<StoredTensor> tensors,
                                                             const StageTimes& times) const {
  StoredResult result;
  result.device = sinks_.device;
  result.model = std::move(model);
  result.ttl_ms = context_.ttl_ms;
  result.tensors = std::move(tensors);
  RequestTimings& t = result.timings;
  t.queue_ns = ns_between(context_.received, times.picked);
  t.input_ns = times.input_ns;
  t.compute_ns = times.compute_ns;
  t.batch_size = times.batch_size;
  const auto now = SteadyClock::now();
  t.output_ns = ns_between(times.output_start, now);
  t.total_ns = ns_between(context_.received, now);
  auto stored = sinks_.store.insert(std::move(reservation), std::move(result));
  if (stored.is_ok() && sinks_.metrics != nullptr) sinks_.metrics->record_timings((*stored)->model, (*stored)->timings);
  return stored;
}

void Responder::partial(std::vector<uint8_t> response) const {
  sinks_.answers.send(context_.reply, std::move(response), false);
}

void Responder::finish(std::vector<uint8_t> response) const {
  sinks_.answers.send(context_.reply, std::move(response), true);
}

void Responder::finish(const ModelAnswer& answer) const {
  // Every model request's admission names a renderer: one without is a bug in the daemon.
  if (context_.render == nullptr) {
    fail(internal_error("no answer renderer for this request"), LogLevel::kError, "Answering a model request");
    return;
  }
  finish(context_.render(request_id(), answer));
}

void Responder::answer(const PairsAnswer& answer) const {
  if (context_.render_pairs == nullptr) {
    fail(internal_error("no answer renderer for this request's pairs"), LogLevel::kError, "Answering a request");
    return;
  }
  sinks_.answers.send(context_.reply, context_.render_pairs(request_id(), answer), answer.final);
}

void Responder::fail(const Status& status) const {
  fail(status, level_for(status.code()), "Request");
}

void Responder::fail(const Status& status, LogLevel level, const std::string& what) const {
  log_with_fields(level, what + " failed: " + status.to_string(), request_log_fields(context_.reply));
  sinks_.answers.send_error(context_.reply, status);
}

}  // namespace recon::daemon
