// SideChannel: the client end of the daemon's regions socket (AF_UNIX SOCK_SEQPACKET): opens the
// session, registers memfds (passed with SCM_RIGHTS) and unregisters them. One FlatBuffer per
// packet, one request at a time (a mutex serialises callers), answers verified like every other.
// The session lives as long as this connection: closing it ends the session on the daemon, which
// then frees the session's regions and result handles.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "recon/client/status.h"
#include "unique_fd.h"
#include "wire.h"

namespace recon::client::detail {

struct RegisteredRegion {
  Id id;
  uint64_t size = 0;
  bool zero_copy = false;
};

class SideChannel {
 public:
  // Connects to `path`. Throws Error(kUnavailable or kPermissionDenied, kConnection).
  static SideChannel connect(const std::string& path, std::chrono::milliseconds timeout);

  SideChannel() = default;
  SideChannel(SideChannel&& other) noexcept
      : socket_(std::move(other.socket_)),
        path_(std::move(other.path_)),
        timeout_(other.timeout_),
        next_request_id_(other.next_request_id_) {}

  // The socket, for watching it for hang-up (the I/O thread polls it; it never reads it).
  int fd() const { return socket_.get(); }

  // OpenSession → the token for Request.session and what the daemon said about itself.
  Id open_session(std::string_view client_name, SessionInfo& info);
  // RegisterRegion with `memfd` attached; the fd stays ours (the kernel duplicates it).
  RegisteredRegion register_region(const Id& session, int memfd, uint64_t size, std::string_view label);
  // True when the daemon deferred the unmap (requests still use the region).
  bool unregister_region(const Id& session, const Id& region);

 private:
  // Sends, then waits for the answer to `request_id` (caller holds mutex_).
  Answer call(flatbuffers::FlatBufferBuilder& builder, uint64_t request_id, int fd_to_pass, wire::ResponseBody expected,
              const char* what);
  Answer receive(const char* what);
  // The Error a daemon queued before closing the connection (a full session table, a stop), if
  // one is waiting to be read; nullopt otherwise. Never blocks.
  std::optional<Error> queued_refusal(const char* what);

  std::mutex mutex_;  // one request/answer exchange at a time; guards next_request_id_
  UniqueFd socket_;
  std::string path_;
  std::chrono::milliseconds timeout_{0};
  uint64_t next_request_id_ = 1;
};

}  // namespace recon::client::detail
