// What every request carries from admission to its answer, whatever its verb: where the answer
// goes, whose session it belongs to, how long its result handles live, when it arrived and by when
// it must have started, and how a model's answers are written. The transport's admission fills it
// once (Server::on_*); the worker's Responder reads it. Where the answer goes and how it is written
// are the transport's: this file names no socket and no wire format.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "daemon/ipc/shm_registry.h"
#include "daemon/serving/model_answer.h"

namespace recon::daemon {

using SteadyClock = std::chrono::steady_clock;

// Where an answer goes in the transport's own terms (daemon/server: which socket, and the peer's
// ZeroMQ routing). Only the transport that made it looks inside, when it sends (AnswerSink).
class ReplyRoute {
 public:
  virtual ~ReplyRoute() = default;
};

// The peer and request an answer belongs to.
struct ReplyTarget {
  std::shared_ptr<const ReplyRoute> route;  // shared: a management request answers from every device
  uint64_t request_id = 0;
  pid_t peer_pid = 0;   // for logs (0 = unknown)
  ClientId client = 0;  // the session the answer belongs to (0: none), whose idle clock it restarts
};

struct RequestContext {
  ReplyTarget reply;
  uint32_t ttl_ms = 0;  // of the result handles it makes
  SteadyClock::time_point received;
  std::optional<SteadyClock::time_point> deadline;  // must have started by then
  // How a model's answer is written for the verb that asked (model requests only; set at
  // admission, read by Responder::finish(const ModelAnswer&)).
  AnswerRenderer render = nullptr;
  // The same for answers of several pairs (InferBatch; read by Responder::answer(const PairsAnswer&)).
  PairsRenderer render_pairs = nullptr;

  ClientId client() const { return reply.client; }
};

}  // namespace recon::daemon
