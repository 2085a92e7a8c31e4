// Server: ZeroMQ requests — receive, verify a private copy, check the session, admit or answer.
// Everything here runs on the I/O thread and never waits for the GPU.
#include <algorithm>
#include <bit>
#include <cstring>

#include "daemon/ipc/wire_convert.h"
#include "daemon/server/infer_options.h"
#include "daemon/server/responses.h"
#include "daemon/server/server.h"
#include "daemon/server/status_report.h"
#include "daemon/service/journal_log.h"
#include "gpu/log.h"

namespace recon::daemon {
namespace {

constexpr size_t kMaxMessagesPerWakeup = 256;  // per router: keeps the other sockets responsive
constexpr uint32_t kRetryWhileWarmingMs = 1000;
constexpr uint32_t kMaxAlignment = 1u << 20;
// Room for the FlatBuffers around inline tensor bytes in one answer frame.
constexpr uint64_t kAnswerOverhead = 64 << 10;

bool is_inference(wire::RequestBody type) {
  return type == wire::RequestBody::InferPair || type == wire::RequestBody::InferBatch ||
         type == wire::RequestBody::EncodeRetrieval || type == wire::RequestBody::Match ||
         type == wire::RequestBody::StartJob || type == wire::RequestBody::Infer;
}

bool is_management(wire::RequestBody type) {
  return type == wire::RequestBody::Warmup || type == wire::RequestBody::LoadModel ||
         type == wire::RequestBody::UnloadModel;
}

}  // namespace

void Server::drain_router(ReplySocket socket) {
  ZmqRouter* r = router(socket);
  for (size_t n = 0; r != nullptr && n < kMaxMessagesPerWakeup; ++n) {
    auto incoming = r->receive();
    if (!incoming.is_ok()) {
      log_warning("Receiving on the ZeroMQ socket failed: " + incoming.status().to_string());
      return;
    }
    if (!incoming->has_value()) return;
    on_request(socket, std::move(**incoming));
  }
}

void Server::on_request(ReplySocket socket, ZmqIncoming incoming) {
  ReplyTarget target;
  target.route = std::make_shared<const ZmqReplyRoute>(socket, std::move(incoming.envelope));
  target.peer_pid = incoming.peer ? incoming.peer->pid : 0;
  if (incoming.too_many_parts) {
    reply_error(target, invalid_argument("a request is one frame (after an optional empty delimiter); got " +
                                         std::to_string(incoming.parts) + " frames"));
    return;
  }
  // The one copy the verifier and every handler read: the frame's memory is libzmq's.
  auto verified = copy_and_verify_request(incoming.body.data(), verify_limits_, &target.request_id);
  if (!verified.is_ok()) {
    log_message(LogLevel::kDebug, "Refused a malformed request from pid " + std::to_string(target.peer_pid) + ": " +
                                      verified.status().to_string());
    reply_error(target, verified.status());
    return;
  }
  const wire::Request& request = **verified;  // its id is in target.request_id already
  const RequestOrigin origin{incoming.peer, std::move(incoming.peer_address), incoming.source_fd};
  auto answer = dispatch(socket, origin, request, target);
  if (!answer.is_ok()) {
    const StatusCode code = answer.status().code();
    const bool retry = code == StatusCode::kUnavailable || code == StatusCode::kResourceExhausted;
    reply_error(target, answer.status(), retry ? kRetryWhileWarmingMs : 0);
    return;
  }
  if (answer->has_value()) send_reply(target, **answer, StatusCode::kOk);
}

Result<std::optional<std::vector<uint8_t>>> Server::dispatch(ReplySocket socket, const RequestOrigin& origin,
                                                             const wire::Request& request, ReplyTarget& target) {
  using Answer = std::optional<std::vector<uint8_t>>;
  const std::optional<PeerCredentials>& peer = origin.peer;
  const wire::RequestBody type = request.body_type();
  const char* name = wire::EnumNameRequestBody(type);
  const wire::DaemonState state = state_.load();

  // Which socket serves what: management only on the manager socket, and the manager socket
  // serves nothing but management and status.
  if (is_management(type) && socket != ReplySocket::kManager) {
    return permission_denied(std::string(name) + " is a management request: send it on the manager socket");
  }
  if (socket == ReplySocket::kManager && !is_management(type) && type != wire::RequestBody::GetStatus) {
    return invalid_argument(std::string(name) + " is not served on the manager socket; use the client socket");
  }
  if (is_management(type)) RECON_RETURN_IF_ERROR(check_manager_access(manager_policy_, peer));

  if (state == wire::DaemonState::STOPPING && type != wire::RequestBody::GetStatus) {
    return unavailable("the daemon is stopping");
  }
  if ((state == wire::DaemonState::STARTING || state == wire::DaemonState::WARMING) &&
      (is_inference(type) || is_management(type))) {
    return unavailable("the daemon is warming up (see GetStatus); retry shortly");
  }

  // The answer names its session: until it is sent the request counts as in flight, and sending
  // it restarts the session's idle clock (Server::send_reply).
  auto for_session = [&target](Session& session) -> const ReplyTarget& {
    target.client = session.client;
    ++session.in_flight;
    return target;
  };
  switch (type) {
    case wire::RequestBody::OpenSession: {
      RECON_ASSIGN_OR_RETURN(std::vector<uint8_t> opened,
                             on_open_remote_session(*request.body_as_OpenSession(), socket, origin, target.request_id));
      return Answer(std::move(opened));
    }
    case wire::RequestBody::RegisterRegion:
      return invalid_argument("RegisterRegion carries a memfd, which ZeroMQ cannot: send it on the regions socket");
    case wire::RequestBody::UnregisterRegion: {
      RECON_ASSIGN_OR_RETURN(Session * session, session_for(request, socket, peer));
      RECON_ASSIGN_OR_RETURN(
          const bool deferred,
          registry_.unregister_region(session->client, from_wire(request.body_as_UnregisterRegion()->region_id())));
      return Answer(unregister_region_response(target.request_id, deferred));
    }
    case wire::RequestBody::Infer: {
      RECON_ASSIGN_OR_RETURN(Session * session, session_for(request, socket, peer));
      return on_infer(*request.body_as_Infer(), *session, for_session(*session));
    }
    case wire::RequestBody::InferPair: {
      RECON_ASSIGN_OR_RETURN(Session * session, session_for(request, socket, peer));
      return on_infer_pair(*request.body_as_InferPair(), *session, for_session(*session));
    }
    case wire::RequestBody::InferBatch: {
      RECON_ASSIGN_OR_RETURN(Session * session, session_for(request, socket, peer));
      return on_infer_batch(*request.body_as_InferBatch(), *session, for_session(*session));
    }
    case wire::RequestBody::EncodeRetrieval: {
      RECON_ASSIGN_OR_RETURN(Session * session, session_for(request, socket, peer));
      return on_encode_retrieval(*request.body_as_EncodeRetrieval(), *session, for_session(*session));
    }
    case wire::RequestBody::Match: {
      RECON_ASSIGN_OR_RETURN(Session * session, session_for(request, socket, peer));
      return on_match(*request.body_as_Match(), *session, for_session(*session));
    }
    case wire::RequestBody::StartJob: {
      RECON_ASSIGN_OR_RETURN(Session * session, session_for(request, socket, peer));
      return on_start_job(*request.body_as_StartJob(), *session, for_session(*session));
    }
    case wire::RequestBody::CancelJob: {
      RECON_ASSIGN_OR_RETURN(Session * session, session_for(request, socket, peer));
      const bool cancelled = jobs_->cancel(session->client, request.body_as_CancelJob()->job_request_id());
      return Answer(cancel_job_response(target.request_id, cancelled));
    }
    case wire::RequestBody::Fetch: {
      RECON_ASSIGN_OR_RETURN(Session * session, session_for(request, socket, peer));
      return on_fetch(*request.body_as_Fetch(), *session, for_session(*session));
    }
    case wire::RequestBody::Release: {
      RECON_ASSIGN_OR_RETURN(Session * session, session_for(request, socket, peer));
      RECON_ASSIGN_OR_RETURN(std::vector<uint8_t> released,
                             on_release(*request.body_as_Release(), *session, target.request_id));
      return Answer(std::move(released));
    }
    case wire::RequestBody::GetStatus: {
      const bool sessions = request.body_as_GetStatus()->include_sessions();
      if (sessions) {
        if (socket != ReplySocket::kManager) {
          return permission_denied("GetStatus.include_sessions is served on the manager socket only");
        }
        RECON_RETURN_IF_ERROR(check_manager_access(manager_policy_, peer));
      }
      return Answer(status_response(target.request_id, snapshot(sessions)));
    }
    case wire::RequestBody::Warmup:
      return on_warmup(*request.body_as_Warmup(), target);
    case wire::RequestBody::LoadModel:
      return on_load_model(*request.body_as_LoadModel(), target);
    case wire::RequestBody::UnloadModel:
      return on_unload_model(*request.body_as_UnloadModel(), target);
    default:
      return unimplemented(std::string("request type ") + name + " is not served");
  }
}

Result<Session*> Server::session_for(const wire::Request& request, ReplySocket socket,
                                     const std::optional<PeerCredentials>& peer) {
  const Id128 token = from_wire(request.session());
  if (token.is_zero()) {
    return invalid_argument(std::string(wire::EnumNameRequestBody(request.body_type())) +
                            " needs a session: open one on the regions socket (OpenSession) and put its token in "
                            "Request.session");
  }
  Session* session = sessions_.find(token);
  // A token presented by another user, or a local session's token presented over tcp, is as good
  // as unknown: tokens are not transferable.
  const bool foreign = session != nullptr && session->kind == SessionKind::kLocal &&
                       (socket == ReplySocket::kTcp || (peer && peer->uid != session->peer.uid));
  if (session == nullptr || foreign) {
    return not_found("unknown session (closed, or never opened)");
  }
  session->last_used = SteadyClock::now();
  return session;
}

Result<std::optional<std::vector<uint8_t>>> Server::on_fetch(const wire::Fetch& body, Session& session,
                                                             const ReplyTarget& target) {
  RECON_ASSIGN_OR_RETURN(std::shared_ptr<const StoredResult> result,
                         store_.find(session.client, from_wire(body.handle())));
  FetchWork job;
  job.context.reply = target;
  job.context.received = SteadyClock::now();
  job.device = result->device;
  job.release = body.release();
  job.result = result;
  if (body.tensors() == nullptr || body.tensors()->size() == 0) {
    for (size_t i = 0; i < result->tensors.size(); ++i) job.tensors.push_back(i);
  } else {
    for (const flatbuffers::String* name : *body.tensors()) {
      const StoredTensor* t = result->find(name->string_view());
      if (t == nullptr) return invalid_argument("the handle has no tensor '" + name->str() + "'");
      const size_t index = static_cast<size_t>(t - result->tensors.data());
      if (std::find(job.tensors.begin(), job.tensors.end(), index) != job.tensors.end()) {
        return invalid_argument("tensor '" + name->str() + "' is named twice");
      }
      job.tensors.push_back(index);
    }
  }
  uint64_t total = 0;
  for (size_t index : job.tensors) total += result->tensors[index].bytes;

  if (const wire::RegionDestination* region = body.destination_as_RegionDestination()) {
    RECON_ASSIGN_OR_RETURN(job.destination, registry_.lease(session.client, from_wire(region->region_id())));
    const uint64_t size = job.destination.region_size();
    const uint64_t alignment = region->alignment() == 0 ? 256 : region->alignment();
    if (!std::has_single_bit(alignment) || alignment > kMaxAlignment) {
      return invalid_argument("alignment " + std::to_string(alignment) + " is not a power of two up to 1 MiB");
    }
    if (region->offset() > size) {
      return invalid_argument("offset " + std::to_string(region->offset()) + " is beyond the region's " +
                              std::to_string(size) + " bytes");
    }
    const uint64_t room = size - region->offset();
    const uint64_t capacity = region->capacity() == 0 ? room : region->capacity();
    if (capacity > room) {
      return invalid_argument("capacity " + std::to_string(capacity) + " from offset " +
                              std::to_string(region->offset()) + " runs past the region's end");
    }
    // Every value below is ≤ the region size (< 2^63), so the sums cannot wrap.
    const uint64_t end = region->offset() + capacity;
    uint64_t cursor = region->offset();
    for (size_t i = 0; i < job.tensors.size(); ++i) {
      if (i > 0) cursor = (cursor + alignment - 1) / alignment * alignment;
      const uint64_t bytes = result->tensors[job.tensors[i]].bytes;
      if (cursor > end || bytes > end - cursor) {
        return invalid_argument("the tensors do not fit: " + std::to_string(total) +
                                " bytes (plus alignment) from offset " + std::to_string(region->offset()) +
                                " with capacity " + std::to_string(capacity));
      }
      job.offsets.push_back(cursor);
      cursor += bytes;
    }
  } else if (body.destination_type() == wire::FetchDestination::InlineDestination) {
    if (total + kAnswerOverhead > options_.limits.max_message_bytes) {
      return invalid_argument("the tensors (" + std::to_string(total) + " bytes) are too large for an inline answer (" +
                              std::to_string(options_.limits.max_message_bytes) + "-byte frames): fetch into a region");
    }
  } else {
    return invalid_argument("Fetch needs a destination (a region of this session, or inline)");
  }
  RECON_RETURN_IF_ERROR(scheduler_->submit(std::move(job)));
  return std::optional<std::vector<uint8_t>>();
}

Result<std::vector<uint8_t>> Server::on_release(const wire::Release& body, Session& session, uint64_t request_id) {
  uint32_t released = 0;
  std::vector<Id128> not_found;
  if (body.handles() != nullptr) {
    for (const wire::Id128* id : *body.handles()) {
      const Id128 handle = from_wire(id);
      if (store_.release(session.client, handle)) {
        ++released;
      } else {
        not_found.push_back(handle);
      }
    }
  }
  // Nothing released at all (a double release, a foreign or expired id): a NOT_FOUND error, so
  // that the common one-handle case reads like every other lookup. A partial success lists the
  // unknown ids in ReleaseResult.not_found instead.
  if (released == 0 && !not_found.empty()) {
    return not_found.size() == 1
               ? Status(StatusCode::kNotFound, "no result handle " + not_found.front().to_string() +
                                                   " in this session (already released, expired or never made)")
               : Status(StatusCode::kNotFound,
                        "none of the " + std::to_string(not_found.size()) + " handles is held by this session");
  }
  return release_response(request_id, released, not_found);
}

Result<std::vector<uint8_t>> Server::on_open_remote_session(const wire::OpenSession& body, ReplySocket socket,
                                                            const RequestOrigin& origin, uint64_t request_id) {
  // The monitor's events up to now, so that the connection's epoch is this connection's.
  watch_connections(socket);
  RemoteOrigin remote;
  if (socket == ReplySocket::kTcp) {
    remote.peer = "tcp peer " + (origin.address.empty() ? std::string("(unknown address)") : origin.address);
  } else {
    remote.peer = origin.peer ? "uid " + std::to_string(origin.peer->uid) : std::string("an unknown local peer");
  }
  remote.socket = static_cast<int>(socket);
  if (const ConnectionMonitor* m = monitor(socket); m != nullptr && origin.fd >= 0) {
    remote.connection = m->connection_of(origin.fd);
  }
  RECON_ASSIGN_OR_RETURN(Session * session,
                         sessions_.open_remote(origin.peer.value_or(PeerCredentials{}), std::move(remote)));
  session->name = sanitize_client_name(body.client_name() ? body.client_name()->string_view() : "");
  store_.open_client(session->client);
  log_info("Opened remote session " + std::to_string(session->client) + " (" + session->name + ")");
  SessionLimitsView limits{options_.registry.max_regions_per_client, options_.registry.max_bytes_per_client,
                           options_.limits.max_handles_per_client, options_.limits.max_result_bytes_per_client,
                           options_.limits.max_message_bytes};
  return session_opened_response(request_id, session->token, limits, options_.server_version);
}

}  // namespace recon::daemon
