// SessionTable: the open client sessions, by token. A session is what handles, regions and
// quotas belong to. Local clients get one per side-channel connection (it ends when the
// connection closes, whatever the reason: exit, crash, SIGKILL); remote (tcp) clients open one
// over ZeroMQ and it ends after an idle timeout. ClientIds are never reused. Owned and used by
// the I/O thread only; it decides nothing about what ending a session frees (the server does).
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
#include "gpu/status.h"

namespace recon::daemon {

enum class SessionKind { kLocal, kRemote };

struct Session {
  ClientId client = 0;
  Id128 token;
  SessionKind kind = SessionKind::kLocal;
  PeerCredentials peer;  // local sessions: SO_PEERCRED of the side channel
  std::string name;      // OpenSession.client_name (sanitised, ≤ 64 characters)
  std::chrono::steady_clock::time_point last_used;
  uint32_t in_flight = 0;  // requests answered later (jobs); a session with any is never idle
};

class SessionTable {
 public:
  explicit SessionTable(uint32_t max_sessions) : max_sessions_(max_sessions) {}

  // A new session with a fresh token and ClientId. RESOURCE_EXHAUSTED at max_sessions.
  Result<Session*> open(SessionKind kind, const PeerCredentials& peer);
  // nullptr for an unknown (or closed) token.
  Session* find(const Id128& token);
  Session* find_client(ClientId client);
  // Forgets the session; returns false if it was not open.
  bool close(ClientId client);
  // Remote sessions with no request in flight, idle for longer than `idle`.
  std::vector<ClientId> idle_remote(std::chrono::steady_clock::time_point now, std::chrono::milliseconds idle) const;

  size_t size() const { return by_client_.size(); }
  std::vector<const Session*> all() const;

 private:
  uint32_t max_sessions_;
  ClientId next_client_ = 1;
  std::unordered_map<ClientId, Session> by_client_;
  std::unordered_map<Id128, ClientId, Id128Hash> by_token_;
};

// Printable text from an untrusted name: control characters dropped, at most 64 bytes.
std::string sanitize_client_name(std::string_view name);

}  // namespace recon::daemon
