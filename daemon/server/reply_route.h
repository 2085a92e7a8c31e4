// ZmqReplyRoute: where the server sends a request's answer — which of its ROUTER sockets the
// request came in on and the peer's envelope there. Made by Server::on_request; the serving core
// carries it as an opaque ReplyRoute (request_context.h) and only the server reads it back.
#pragma once

#include "daemon/server/zmq_router.h"
#include "daemon/serving/request_context.h"

namespace recon::daemon {

enum class ReplySocket { kClient, kManager, kTcp };

struct ZmqReplyRoute final : ReplyRoute {
  ZmqReplyRoute(ReplySocket socket, ZmqEnvelope envelope) : socket(socket), envelope(std::move(envelope)) {}
  ReplySocket socket;
  ZmqEnvelope envelope;
};

// The route of `target`: every route the server sends to was made by its own on_request, so a
// target without one (a request the server never received) has nowhere to go: nullptr.
inline const ZmqReplyRoute* zmq_route(const ReplyTarget& target) {
  return static_cast<const ZmqReplyRoute*>(target.route.get());
}

}  // namespace recon::daemon
