// SessionTable: see session_table.h.
#include "daemon/server/session_table.h"

namespace recon::daemon {

Result<Session*> SessionTable::open_local(const PeerCredentials& peer) {
  const size_t local = by_client_.size() - remote_count_;
  if (local >= limits_.max_local) {
    return resource_exhausted("the daemon serves at most " + std::to_string(limits_.max_local) + " sessions");
  }
  return add(SessionKind::kLocal, peer);
}

Result<Session*> SessionTable::open_remote(const PeerCredentials& peer, RemoteOrigin origin) {
  if (remote_count_ >= limits_.max_remote) {
    return resource_exhausted("the daemon serves at most " + std::to_string(limits_.max_remote) +
                              " remote sessions (opened over ZeroMQ)");
  }
  const auto of_peer = remote_per_peer_.find(origin.peer);
  if (of_peer != remote_per_peer_.end() && of_peer->second >= limits_.max_remote_per_peer) {
    return resource_exhausted(origin.peer + " already has " + std::to_string(of_peer->second) +
                              " remote sessions open, the most one peer may have");
  }
  RECON_ASSIGN_OR_RETURN(Session * session, add(SessionKind::kRemote, peer));
  ++remote_per_peer_[origin.peer];
  ++remote_count_;
  session->origin = std::move(origin);
  return session;
}

Result<Session*> SessionTable::add(SessionKind kind, const PeerCredentials& peer) {
  RECON_ASSIGN_OR_RETURN(const Id128 token, Id128::random());
  const ClientId client = next_client_++;
  Session& session = by_client_[client];
  session.client = client;
  session.token = token;
  session.kind = kind;
  session.peer = peer;
  session.last_used = std::chrono::steady_clock::now();
  by_token_[token] = client;
  return &session;
}

Session* SessionTable::find(const Id128& token) {
  if (token.is_zero()) return nullptr;
  auto it = by_token_.find(token);
  if (it == by_token_.end()) return nullptr;
  return find_client(it->second);
}

Session* SessionTable::find_client(ClientId client) {
  auto it = by_client_.find(client);
  return it == by_client_.end() ? nullptr : &it->second;
}

bool SessionTable::close(ClientId client) {
  auto it = by_client_.find(client);
  if (it == by_client_.end()) return false;
  if (it->second.kind == SessionKind::kRemote) {
    --remote_count_;
    if (auto peer = remote_per_peer_.find(it->second.origin.peer);
        peer != remote_per_peer_.end() && --peer->second == 0) {
      remote_per_peer_.erase(peer);
    }
  }
  by_token_.erase(it->second.token);
  by_client_.erase(it);
  return true;
}

std::vector<ClientId> SessionTable::idle_remote(std::chrono::steady_clock::time_point now,
                                                std::chrono::milliseconds idle) const {
  std::vector<ClientId> out;
  for (const auto& [client, session] : by_client_) {
    if (session.kind == SessionKind::kRemote && session.in_flight == 0 && now - session.last_used > idle) {
      out.push_back(client);
    }
  }
  return out;
}

std::vector<ClientId> SessionTable::remote_on(int socket, const ConnectionId& connection) const {
  std::vector<ClientId> out;
  for (const auto& [client, session] : by_client_) {
    if (session.kind == SessionKind::kRemote && session.origin.socket == socket &&
        session.origin.connection == connection) {
      out.push_back(client);
    }
  }
  return out;
}

std::vector<const Session*> SessionTable::all() const {
  std::vector<const Session*> out;
  out.reserve(by_client_.size());
  for (const auto& [_, session] : by_client_) out.push_back(&session);
  return out;
}

std::string sanitize_client_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (out.size() >= 64) break;
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) out.push_back(c);
  }
  return out;
}

}  // namespace recon::daemon
