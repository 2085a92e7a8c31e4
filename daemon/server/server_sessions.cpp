// Server: the regions side channel (one session per connection) and the end of a session.
// Runs on the I/O thread. Packets are answered by RegionService; this file owns the
// connections and frees a session's resources the moment its connection closes.
#include "daemon/ipc/message_verify.h"
#include "daemon/ipc/wire_convert.h"
#include "daemon/server/server.h"
#include "daemon/service/journal_log.h"
#include "gpu/log.h"

namespace recon::daemon {

void Server::accept_side_channels() {
  while (regions_listening_) {
    auto accepted = regions_listener_.accept();
    if (!accepted.is_ok()) return;  // nobody waiting (or a transient error; poll tells us again)
    RegionChannel channel = std::move(accepted).value();
    PeerCredentials peer;
    if (auto credentials = channel.peer_credentials(); credentials.is_ok()) peer = *credentials;
    auto session = stopping_ ? Result<Session*>(unavailable("the daemon is stopping")) : sessions_.open_local(peer);
    if (!session.is_ok()) {
      // Tell the peer why before closing (its OpenSession would otherwise just see EOF).
      log_warning("Refusing a side-channel connection of pid " + std::to_string(peer.pid) + ": " +
                  session.status().message());
      (void)channel.send(error_response(0, session.status(), 1000));
      continue;
    }
    if (Status s = channel.set_nonblocking(true); !s.is_ok()) {
      sessions_.close((*session)->client);
      continue;
    }
    store_.open_client((*session)->client);
    log_message(LogLevel::kDebug, "Session " + std::to_string((*session)->client) + " opened by pid " +
                                      std::to_string(peer.pid) + " (uid " + std::to_string(peer.uid) + ")");
    side_channels_.push_back(SideChannel{std::move(channel), (*session)->client});
  }
}

bool Server::on_side_channel(size_t index) {
  SideChannel& connection = side_channels_[index];
  const ClientId client = connection.client;
  // A few packets per wakeup; poll reports the rest.
  for (int n = 0; n < 16; ++n) {
    auto message = connection.channel.receive(RegionChannel::kDefaultMaxMessageBytes, 0);
    if (!message.is_ok()) {
      // Refused packet (too large, too many fds): consumed and closed; answer and go on.
      if (!connection.channel.send(error_response(0, message.status())).is_ok()) {
        end_session(client, "its connection failed");
        return false;
      }
      continue;
    }
    if (message->event == ReceiveEvent::kWouldBlock) return true;
    if (message->event == ReceiveEvent::kPeerClosed) {
      end_session(client, "its connection closed");
      return false;
    }
    Session* session = sessions_.find_client(client);
    if (session == nullptr) return false;
    // The client's name (for logs and status) comes with OpenSession; RegionService answers it.
    if (auto request = verify_request(message->bytes, kSideChannelLimits);
        request.is_ok() && (*request)->body_type() == wire::RequestBody::OpenSession) {
      const auto* open = (*request)->body_as_OpenSession();
      session->name = sanitize_client_name(open->client_name() ? open->client_name()->string_view() : "");
      log_info("Session " + std::to_string(client) + " opened by pid " + std::to_string(session->peer.pid) + " (" +
               session->name + ")");
    }
    session->last_used = SteadyClock::now();
    const SessionContext context{client, session->token, session->peer};
    const std::vector<uint8_t> answer = region_service_->handle(context, std::move(message).value());
    if (!connection.channel.send(answer).is_ok()) {
      end_session(client, "it stopped reading its connection");
      return false;
    }
  }
  return true;
}

void Server::end_session(ClientId client, const std::string& why) {
  Session* session = sessions_.find_client(client);
  if (session == nullptr) return;
  const PeerCredentials peer = session->peer;
  const std::string name = session->name;
  jobs_->cancel_client(client);  // before the drop: a job's next step then does nothing
  DroppedJobs dropped = scheduler_->drop_client(client);
  const size_t queued = dropped.size();
  // The peer may still be connected over ZeroMQ (only its side channel went): tell it.
  answer_dropped(dropped, unavailable("the session ended"));
  dropped = DroppedJobs();  // frees their leases before the regions are dropped
  const size_t handles = store_.close_client(client);
  const size_t regions = registry_.drop_client(client);
  sessions_.close(client);
  log_with_fields(LogLevel::kInfo,
                  "Session " + std::to_string(client) + " of pid " + std::to_string(peer.pid) +
                      (name.empty() ? std::string() : " (" + name + ")") + " ended (" + why + "): freed " +
                      std::to_string(handles) + " result handles, " + std::to_string(regions) + " regions, " +
                      std::to_string(queued) + " queued requests",
                  {{std::string(kFieldClientPid), std::to_string(peer.pid)},
                   {std::string(kFieldClientUid), std::to_string(peer.uid)}});
}

}  // namespace recon::daemon
