// AnswerSink: where a worker's answers leave the serving core. The transport implements it
// (daemon/server's Outbox hands them to the I/O thread, which alone touches the sockets); the
// serving core sends through it without knowing the socket or the wire format.
#pragma once

#include <cstdint>
#include <vector>

#include "daemon/serving/request_context.h"
#include "gpu/status.h"

namespace recon::daemon {

class AnswerSink {
 public:
  virtual ~AnswerSink() = default;
  // A whole answer to `target`, as the renderer its admission chose wrote it; `final` on the last
  // answer of the request (false: a streamed answer, more follow).
  virtual void send(const ReplyTarget& target, std::vector<uint8_t> response, bool final) = 0;
  // The request failed with `status`: the transport writes its Error answer (always the last).
  virtual void send_error(const ReplyTarget& target, const Status& status) = 0;
};

}  // namespace recon::daemon
