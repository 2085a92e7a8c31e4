// What every request carries from admission to its answer, whatever its verb: where the answer
// goes, whose session it belongs to, how long its result handles live, when it arrived and by when
// it must have started, and how a model's answer is written. Admission fills it once (Server::on_*); the
// worker's Responder reads it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>

#include "daemon/ipc/shm_registry.h"
#include "daemon/server/zmq_router.h"
#include "daemon/serving/model_answer.h"

namespace recon::daemon {

using SteadyClock = std::chrono::steady_clock;

enum class ReplySocket { kClient, kManager, kTcp };

// The peer and request an answer belongs to.
struct ReplyTarget {
  ReplySocket socket = ReplySocket::kClient;
  ZmqEnvelope envelope;
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

  ClientId client() const { return reply.client; }
};

}  // namespace recon::daemon
