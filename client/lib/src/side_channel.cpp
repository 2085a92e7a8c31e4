// SideChannel: SOCK_SEQPACKET + SCM_RIGHTS transport and the session/region requests.
#include "side_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace recon::client::detail {
namespace {

Error connection_error(const std::string& message, ErrorCode code = ErrorCode::kUnavailable) {
  return Error(code, ErrorSource::kConnection, message);
}

}  // namespace

SideChannel SideChannel::connect(const std::string& path, std::chrono::milliseconds timeout) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient,
                "regions socket path must have 1.." + std::to_string(sizeof(address.sun_path) - 1) + " characters: '" +
                    path + "'");
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  SideChannel channel;
  channel.socket_ = UniqueFd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!channel.socket_)
    throw Error(ErrorCode::kInternal, ErrorSource::kClient, std::string("socket: ") + std::strerror(errno));
  int rc;
  do {
    rc = ::connect(channel.socket_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    const std::string what = "cannot connect to recond's regions socket " + path + ": " + std::strerror(err);
    if (err == EACCES || err == EPERM) throw connection_error(what, ErrorCode::kPermissionDenied);
    if (err == ENOENT || err == ECONNREFUSED) throw connection_error(what + " (is recond running?)");
    throw connection_error(what);
  }
  channel.path_ = path;
  channel.timeout_ = timeout;
  return channel;
}

Answer SideChannel::call(flatbuffers::FlatBufferBuilder& builder, uint64_t request_id, int fd_to_pass,
                         wire::ResponseBody expected, const char* what) {
  // Caller holds mutex_.
  iovec iov{builder.GetBufferPointer(), builder.GetSize()};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd_to_pass >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd_to_pass, sizeof(int));
  }
  ssize_t sent;
  do {
    sent = ::sendmsg(socket_.get(), &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    const int err = errno;
    if (err == EPIPE || err == ECONNRESET || err == ENOTCONN) {
      // A daemon that refuses a connection sends its reason and closes at once, so our first
      // request can fail to send while the reason waits unread: report the reason.
      if (std::optional<Error> refusal = queued_refusal(what)) throw *refusal;
      throw connection_error("recond closed the session (stopped or restarted); connect again");
    }
    throw connection_error(std::string(what) + ": sendmsg on the regions socket: " + std::strerror(err));
  }

  // Wait for the answer with our request id; a stale one (an earlier call that timed out) is
  // skipped. An Error with request_id 0 (the daemon could not read ours) is ours too.
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    int wait_ms = -1;
    if (timeout_.count() > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      wait_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    pollfd poller{socket_.get(), POLLIN, 0};
    int ready;
    do {
      ready = ::poll(&poller, 1, wait_ms);
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
      throw connection_error(std::string("no answer to ") + what + " from recond within " +
                             std::to_string(timeout_.count()) + " ms");
    }
    Answer answer = receive(what);
    const uint64_t id = answer.response->request_id();
    if (id != request_id && !(id == 0 && answer.response->body_type() == wire::ResponseBody::Error)) continue;
    expect_body(answer, expected, what);
    return answer;
  }
}

std::optional<Error> SideChannel::queued_refusal(const char* what) {
  pollfd poller{socket_.get(), POLLIN, 0};
  if (::poll(&poller, 1, 0) <= 0 || (poller.revents & POLLIN) == 0) return std::nullopt;
  try {
    const Answer answer = receive(what);
    if (answer.response->body_type() == wire::ResponseBody::Error) {
      return error_from_wire(answer.response->body_as_Error());
    }
  } catch (const Error&) {
    // Nothing readable was queued (only the end of the connection).
  }
  return std::nullopt;
}

Answer SideChannel::receive(const char* what) {
  // recvmsg into a vector: heap storage is 16-byte aligned, as the verifier wants.
  std::vector<uint8_t> bytes(kSideChannelLimits.max_bytes);
  iovec in{bytes.data(), bytes.size()};
  alignas(cmsghdr) char in_control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr reply{};
  reply.msg_iov = &in;
  reply.msg_iovlen = 1;
  reply.msg_control = in_control;
  reply.msg_controllen = sizeof(in_control);
  // A daemon that closes with our request unread (a refused connection) leaves ECONNRESET
  // pending, which Linux reports before the answers still queued: reading once more gets them
  // (or the end of the connection).
  ssize_t received;
  bool reset_read = false;
  for (;;) {
    received = ::recvmsg(socket_.get(), &reply, MSG_CMSG_CLOEXEC);
    if (received >= 0) break;
    if (errno == EINTR) continue;
    if (errno == ECONNRESET && !reset_read) {
      reset_read = true;
      continue;
    }
    break;
  }
  // The daemon never sends fds; close any that came anyway.
  if (received >= 0) {
    for (cmsghdr* h = CMSG_FIRSTHDR(&reply); h != nullptr; h = CMSG_NXTHDR(&reply, h)) {
      if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
        UniqueFd{fd};
      }
    }
  }
  if (received <= 0) {
    throw connection_error(std::string("recond closed the session while answering ") + what +
                           " (stopped or restarted); connect again");
  }
  if ((reply.msg_flags & MSG_TRUNC) != 0) {
    throw Error(ErrorCode::kInternal, ErrorSource::kConnection, "oversize answer on the regions socket");
  }
  bytes.resize(static_cast<size_t>(received));
  return verify_answer(std::move(bytes), kSideChannelLimits);
}

Id SideChannel::open_session(std::string_view client_name, SessionInfo& info) {
  std::lock_guard lock(mutex_);
  flatbuffers::FlatBufferBuilder builder(256);
  const auto name = builder.CreateString(client_name.data(), client_name.size());
  const auto body = wire::CreateOpenSession(builder, name);
  const uint64_t request_id = next_request_id_++;
  finish_request(builder, request_id, Id{}, wire::RequestBody::OpenSession, body.Union());
  const Answer answer = call(builder, request_id, -1, wire::ResponseBody::SessionOpened, "OpenSession");
  const wire::SessionOpened* opened = answer.response->body_as_SessionOpened();
  const Id session = from_wire(opened->session());
  if (session.is_zero()) {
    throw Error(ErrorCode::kInternal, ErrorSource::kConnection, "recond opened a session without a token");
  }
  info.server_version = opened->server_version() != nullptr ? opened->server_version()->str() : "";
  info.min_protocol_version = opened->min_protocol_version();
  info.max_protocol_version = opened->max_protocol_version();
  if (const wire::SessionLimits* limits = opened->limits()) {
    info.max_regions = limits->max_regions();
    info.max_handles = limits->max_handles();
    info.max_region_bytes = limits->max_region_bytes();
    info.max_result_bytes = limits->max_result_bytes();
    info.max_message_bytes = limits->max_message_bytes();
  }
  return session;
}

RegisteredRegion SideChannel::register_region(const Id& session, int memfd, uint64_t size, std::string_view label) {
  std::lock_guard lock(mutex_);
  flatbuffers::FlatBufferBuilder builder(256);
  const auto text = builder.CreateString(label.data(), label.size());
  const auto body = wire::CreateRegisterRegion(builder, size, text);
  const uint64_t request_id = next_request_id_++;
  finish_request(builder, request_id, session, wire::RequestBody::RegisterRegion, body.Union());
  const Answer answer = call(builder, request_id, memfd, wire::ResponseBody::RegisterRegionResult, "RegisterRegion");
  const wire::RegisterRegionResult* result = answer.response->body_as_RegisterRegionResult();
  const Id id = from_wire(result->region_id());
  if (id.is_zero())
    throw Error(ErrorCode::kInternal, ErrorSource::kConnection, "recond registered a region without an id");
  return RegisteredRegion{id, result->size(), result->zero_copy()};
}

bool SideChannel::unregister_region(const Id& session, const Id& region) {
  std::lock_guard lock(mutex_);
  flatbuffers::FlatBufferBuilder builder(128);
  const wire::Id128 wire_id = to_wire(region);
  const auto body = wire::CreateUnregisterRegion(builder, &wire_id);
  const uint64_t request_id = next_request_id_++;
  finish_request(builder, request_id, session, wire::RequestBody::UnregisterRegion, body.Union());
  const Answer answer = call(builder, request_id, -1, wire::ResponseBody::UnregisterRegionResult, "UnregisterRegion");
  return answer.response->body_as_UnregisterRegionResult()->deferred();
}

}  // namespace recon::client::detail
