// ZmqRouter: see zmq_router.h.
#include "daemon/server/zmq_router.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace recon::daemon {
namespace {

std::string zmq_error(const std::string& call) {
  return call + ": " + zmq_strerror(zmq_errno());
}

template <typename T>
Status set_option(void* socket, int option, T value, const char* name) {
  if (zmq_setsockopt(socket, option, &value, sizeof(value)) != 0) {
    std::string call = "zmq_setsockopt(";  // appended, not a chain of +: GCC 12 PR 105329
    call.append(name).append(")");
    return internal_error(zmq_error(call));
  }
  return Status::ok();
}

}  // namespace

Result<ZmqContext> ZmqContext::create() {
  void* context = zmq_ctx_new();
  if (context == nullptr) return internal_error(zmq_error("zmq_ctx_new"));
  // Signals are handled by signalfd; libzmq must not install handlers or block in term.
  zmq_ctx_set(context, ZMQ_BLOCKY, 0);
  return ZmqContext(context);
}

ZmqContext::~ZmqContext() {
  if (context_ != nullptr) {
    while (zmq_ctx_term(context_) != 0 && zmq_errno() == EINTR) {
    }
  }
}

ZmqFrame::ZmqFrame(ZmqFrame&& other) noexcept {
  zmq_msg_init(&msg_);
  zmq_msg_move(&msg_, &other.msg_);
}

ZmqFrame& ZmqFrame::operator=(ZmqFrame&& other) noexcept {
  if (this != &other) zmq_msg_move(&msg_, &other.msg_);
  return *this;
}

std::optional<PeerCredentials> parse_peer_address(const char* address) {
  if (address == nullptr) return std::nullopt;
  const std::string text(address);
  // The last three ':'-separated fields are uid, gid, pid.
  size_t end = text.size();
  unsigned long values[3] = {};
  for (int i = 2; i >= 0; --i) {
    const size_t colon = text.rfind(':', end == 0 ? 0 : end - 1);
    if (colon == std::string::npos) return std::nullopt;
    const std::string field = text.substr(colon + 1, end - colon - 1);
    if (field.empty() || field.find_first_not_of("0123456789") != std::string::npos || field.size() > 10) {
      return std::nullopt;
    }
    values[i] = std::strtoul(field.c_str(), nullptr, 10);
    end = colon;
  }
  PeerCredentials peer;
  peer.uid = static_cast<uid_t>(values[0]);
  peer.gid = static_cast<gid_t>(values[1]);
  peer.pid = static_cast<pid_t>(values[2]);
  return peer;
}

Result<ZmqRouter> ZmqRouter::create(const ZmqContext& context, const ZmqRouterOptions& options) {
  void* socket = zmq_socket(context.get(), ZMQ_ROUTER);
  if (socket == nullptr) return internal_error(zmq_error("zmq_socket(ROUTER)"));
  ZmqRouter router(socket, options);
  RECON_RETURN_IF_ERROR(
      set_option<int64_t>(socket, ZMQ_MAXMSGSIZE, static_cast<int64_t>(options.max_frame_bytes), "ZMQ_MAXMSGSIZE"));
  RECON_RETURN_IF_ERROR(set_option<int>(socket, ZMQ_SNDHWM, options.send_hwm, "ZMQ_SNDHWM"));
  RECON_RETURN_IF_ERROR(set_option<int>(socket, ZMQ_RCVHWM, options.receive_hwm, "ZMQ_RCVHWM"));
  RECON_RETURN_IF_ERROR(set_option<int>(socket, ZMQ_LINGER, options.linger_ms, "ZMQ_LINGER"));
  // Unroutable answers fail visibly (EHOSTUNREACH) instead of vanishing.
  RECON_RETURN_IF_ERROR(set_option<int>(socket, ZMQ_ROUTER_MANDATORY, 1, "ZMQ_ROUTER_MANDATORY"));
  return router;
}

ZmqRouter& ZmqRouter::operator=(ZmqRouter&& other) noexcept {
  if (this != &other) {
    close();
    socket_ = std::exchange(other.socket_, nullptr);
    options_ = other.options_;
    endpoint_ = std::move(other.endpoint_);
  }
  return *this;
}

void ZmqRouter::close() {
  if (socket_ != nullptr) zmq_close(std::exchange(socket_, nullptr));
}

Status ZmqRouter::bind_listening_fd(int fd, const std::string& path) {
  RECON_RETURN_IF_ERROR(set_option<int>(socket_, ZMQ_USE_FD, fd, "ZMQ_USE_FD"));
  return bind("ipc://" + path);
}

Status ZmqRouter::bind(const std::string& endpoint) {
  if (zmq_bind(socket_, endpoint.c_str()) != 0) return unavailable(zmq_error("zmq_bind(" + endpoint + ")"));
  // The real address (a "*" port becomes the one the kernel chose).
  char last[256] = {};
  size_t length = sizeof(last);
  endpoint_ = zmq_getsockopt(socket_, ZMQ_LAST_ENDPOINT, last, &length) == 0 ? std::string(last) : endpoint;
  return Status::ok();
}

Result<std::optional<ZmqIncoming>> ZmqRouter::receive() {
  ZmqFrame id;
  if (zmq_msg_recv(id.raw(), socket_, ZMQ_DONTWAIT) < 0) {
    if (zmq_errno() == EAGAIN || zmq_errno() == EINTR) return std::optional<ZmqIncoming>();
    return internal_error(zmq_error("zmq_msg_recv"));
  }
  ZmqIncoming in;
  const auto id_bytes = id.data();
  in.envelope.routing_id.assign(id_bytes.begin(), id_bytes.end());
  bool more = zmq_msg_more(id.raw()) != 0;
  bool seen_body = false;
  while (more) {
    ZmqFrame frame;
    // The rest of a multipart message is already here: libzmq delivers messages whole.
    if (zmq_msg_recv(frame.raw(), socket_, 0) < 0) {
      if (zmq_errno() == EINTR) continue;
      return internal_error(zmq_error("zmq_msg_recv (next part)"));
    }
    more = zmq_msg_more(frame.raw()) != 0;
    ++in.parts;
    if (in.parts > options_.max_parts) {
      in.too_many_parts = true;  // keep draining this message's frames, keep none of them
      continue;
    }
    if (in.parts == 1) {
      const char* address = zmq_msg_gets(frame.raw(), "Peer-Address");
      if (address != nullptr) in.peer_address = address;
      in.peer = parse_peer_address(address);
      in.source_fd = zmq_msg_get(frame.raw(), ZMQ_SRCFD);
    }
    if (!seen_body && frame.data().empty() && more && in.parts == 1) {
      in.envelope.delimiter = true;  // a REQ peer's empty delimiter
      continue;
    }
    if (seen_body) {
      in.too_many_parts = true;  // two body frames
      continue;
    }
    in.body = std::move(frame);
    seen_body = true;
  }
  return std::optional<ZmqIncoming>(std::move(in));
}

Status ZmqRouter::send(const ZmqEnvelope& envelope, std::span<const uint8_t> body) {
  if (zmq_send(socket_, envelope.routing_id.data(), envelope.routing_id.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    return unavailable(zmq_error("sending the answer"));
  }
  // After the first frame the rest of the message cannot fail for routing reasons.
  if (envelope.delimiter && zmq_send(socket_, "", 0, ZMQ_SNDMORE) < 0) {
    return unavailable(zmq_error("sending the delimiter"));
  }
  if (zmq_send(socket_, body.data(), body.size(), 0) < 0) return unavailable(zmq_error("sending the answer body"));
  return Status::ok();
}

}  // namespace recon::daemon
