// SessionTable: the open client sessions, by token. A session is what handles, regions and
// quotas belong to. Local clients get one per side-channel connection (it ends when the
// connection closes, whatever the reason: exit, crash, SIGKILL); remote clients open one over
// ZeroMQ and it ends when the ZeroMQ connection that opened it closes, or after an idle timeout.
// Local and remote sessions have separate limits, and remote ones a limit per peer too, so that
// remote sessions (anyone who can reach the client socket or the TCP port, with no side channel
// to tie them to a process) can never take the slots of local clients. ClientIds are never
// reused. Owned and used by the I/O thread only; it decides nothing about what ending a session
// frees (the server does).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/ipc/id128.h"
#include "daemon/ipc/region_channel.h"
#include "daemon/ipc/shm_registry.h"
#include "daemon/server/connection_monitor.h"
#include "gpu/status.h"

namespace recon::daemon {

enum class SessionKind { kLocal, kRemote };

struct SessionLimits {
  uint32_t max_local = 64;           // side-channel connections
  uint32_t max_remote = 16;          // sessions opened over ZeroMQ, all peers together
  uint32_t max_remote_per_peer = 4;  // ... by one peer (a uid on the client socket, an address over tcp)
};

// Where a remote session came from: its peer (for the per-peer limit) and the ZeroMQ connection
// whose end ends it.
struct RemoteOrigin {
  std::string peer;  // "uid 1000", "tcp 192.0.2.7"
  int socket = 0;    // which ROUTER socket (the server's ReplySocket, as a number)
  ConnectionId connection;
};

struct Session {
  ClientId client = 0;
  Id128 token;
  SessionKind kind = SessionKind::kLocal;
  PeerCredentials peer;  // local sessions: SO_PEERCRED of the side channel
  std::string name;      // OpenSession.client_name (sanitised, ≤ 64 characters)
  std::chrono::steady_clock::time_point last_used;
  uint32_t in_flight = 0;  // requests answered later (jobs); a session with any is never idle
  RemoteOrigin origin;     // remote sessions only
};

class SessionTable {
 public:
  explicit SessionTable(SessionLimits limits) : limits_(limits) {}

  // A new local session with a fresh token and ClientId. RESOURCE_EXHAUSTED at max_local.
  Result<Session*> open_local(const PeerCredentials& peer);
  // A new remote session. RESOURCE_EXHAUSTED at max_remote, or at max_remote_per_peer sessions of
  // origin.peer.
  Result<Session*> open_remote(const PeerCredentials& peer, RemoteOrigin origin);
  // nullptr for an unknown (or closed) token.
  Session* find(const Id128& token);
  Session* find_client(ClientId client);
  // Forgets the session; returns false if it was not open.
  bool close(ClientId client);
  // Remote sessions with no request in flight, idle for longer than `idle`.
  std::vector<ClientId> idle_remote(std::chrono::steady_clock::time_point now, std::chrono::milliseconds idle) const;
  // Remote sessions opened over `connection` of ROUTER socket `socket`.
  std::vector<ClientId> remote_on(int socket, const ConnectionId& connection) const;

  size_t size() const { return by_client_.size(); }
  size_t remote_count() const { return remote_count_; }
  std::vector<const Session*> all() const;

 private:
  Result<Session*> add(SessionKind kind, const PeerCredentials& peer);

  SessionLimits limits_;
  size_t remote_count_ = 0;
  std::unordered_map<std::string, uint32_t> remote_per_peer_;
  ClientId next_client_ = 1;
  std::unordered_map<ClientId, Session> by_client_;
  std::unordered_map<Id128, ClientId, Id128Hash> by_token_;
};

// Printable text from an untrusted name: control characters dropped, at most 64 bytes.
std::string sanitize_client_name(std::string_view name);

}  // namespace recon::daemon
