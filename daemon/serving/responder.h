// Responder: how a GPU worker answers one request, the same way for every verb. It checks that the
// request may still start (its session open, its deadline not passed), stores a result under the
// handle reserved at admission with the request's timings, and sends answers — final, streamed or
// an error — through the transport's AnswerSink, logging failures. A model's answers are written by
// the renderers the transport chose at admission (RequestContext): nothing here knows the wire
// format. One per request; it reads the request's RequestContext, which must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/service/journal_log.h"
#include "daemon/serving/answer_sink.h"
#include "daemon/serving/request_context.h"
#include "daemon/serving/result_store.h"
#include "gpu/status.h"

namespace recon::daemon {

inline uint64_t ns_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return b > a ? static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count()) : 0;
}

// The journal fields that tie a log line to its request (request id, client pid).
std::vector<LogField> request_log_fields(const ReplyTarget& target);

class Metrics;

// Where a worker's answers and results go, and the counters every stored result of a model
// updates (nullptr: not a model's result, e.g. a long job's).
struct AnswerSinks {
  ResultStore& store;
  AnswerSink& answers;
  size_t device = 0;
  Metrics* metrics = nullptr;
};

// What a request's stages took, for its RequestTimings (queue and total time come from the
// context's `received`).
struct StageTimes {
  SteadyClock::time_point picked;  // a worker took the request
  uint64_t input_ns = 0;
  uint64_t compute_ns = 0;
  uint32_t batch_size = 1;
  SteadyClock::time_point output_start;  // the output stage ends when the result is stored
};

class Responder {
 public:
  Responder(const RequestContext& context, const AnswerSinks& sinks) : context_(context), sinks_(sinks) {}

  // False when the request must not run: its deadline passed while it was queued (answered
  // UNAVAILABLE) or its session ended (nobody holds its results; not answered).
  bool may_start(SteadyClock::time_point picked) const;
  // Stores `tensors` as a result of `model` under `reservation`, with the request's TTL and
  // timings, and records the timings in the model's counters (every kind's results pass here, so
  // every kind counts). Answers nothing: on failure the caller decides (a batch may release what it
  // stored before).
  Result<std::shared_ptr<const StoredResult>> store(HandleReservation reservation, std::string model,
                                                    std::vector<StoredTensor> tensors, const StageTimes& times) const;

  uint64_t request_id() const { return context_.reply.request_id; }
  // A streamed answer; more follow, the last through finish().
  void partial(std::vector<uint8_t> response) const;
  void finish(std::vector<uint8_t> response) const;
  // A model request's final answer, written by the renderer its admission chose.
  void finish(const ModelAnswer& answer) const;
  // An answer of several pairs (InferBatch), streamed or final as `answer.final` says, written by
  // the renderer its admission chose.
  void answer(const PairsAnswer& answer) const;
  // An Error answer, logged (client mistakes at debug level, the daemon's own failures as warnings).
  void fail(const Status& status) const;
  // The same, logged at `level` as "<what> failed: ...".
  void fail(const Status& status, LogLevel level, const std::string& what) const;

 private:
  const RequestContext& context_;
  const AnswerSinks& sinks_;
};

}  // namespace recon::daemon
