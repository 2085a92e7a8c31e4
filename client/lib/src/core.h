// Core: everything one Client connection owns, shared (std::shared_ptr) by the Client and by the
// Results, PendingResults and ImageBuffers made from it: the session's side channel, the I/O
// thread with its ZeroMQ sockets, the output arena, the session token and request ids.
// Destroyed when the last of them goes: the arena unmaps, the I/O thread stops (failing what is
// still pending), and closing the side channel ends the session on the daemon, which frees the
// session's regions and handles.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "output_arena.h"
#include "recon/client/error.h"
#include "recon/client/options.h"
#include "recon/client/status.h"
#include "request_pump.h"
#include "side_channel.h"

namespace recon::client::detail {

// INVALID_ARGUMENT raised by the client library itself (a caller's mistake, before any request).
inline Error invalid(const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, ErrorSource::kClient, message);
}

class Core {
 public:
  // Connects (and with `with_session`, opens the session). Throws Error.
  static std::shared_ptr<Core> open(const ConnectOptions& options, bool with_session);
  ~Core();

  const ConnectOptions& options() const { return options_; }
  bool has_session() const { return side_ != nullptr; }
  const SessionInfo& session_info() const { return session_info_; }
  const Id& session() const { return session_; }
  uint64_t next_request_id() { return next_request_id_.fetch_add(1, std::memory_order_relaxed); }
  // Throws Error(kUnavailable, kConnection) when the daemon has hung up.
  void check_open() const;

  // Queues a finished request; the caller waits on the returned Call. `timeout` zero = the
  // connection's default.
  std::shared_ptr<Call> start(Target target, const flatbuffers::FlatBufferBuilder& finished, uint64_t request_id,
                              std::chrono::milliseconds timeout, Call::OrphanHandler orphan = {});
  // start() + wait + expect_body.
  Answer call(Target target, const flatbuffers::FlatBufferBuilder& finished, uint64_t request_id,
              wire::ResponseBody expected, const char* what, std::chrono::milliseconds timeout);
  // Fire-and-forget Release of one handle; never throws.
  void release_async(const Id& handle) noexcept;

  RegisteredRegion register_region(int memfd, uint64_t size, std::string_view label);
  void unregister_region(const Id& region) noexcept;
  OutputArena& arena() { return *arena_; }

  // A wait limit of zero means "the connection's default" in every *timeout* argument; this
  // resolves it (zero in the options means forever, which stays zero).
  std::chrono::milliseconds effective_timeout(std::chrono::milliseconds requested) const {
    return requested.count() > 0 ? requested : options_.timeout;
  }

 private:
  Core() = default;

  ConnectOptions options_;
  SessionInfo session_info_;
  Id session_;
  std::atomic<uint64_t> next_request_id_{1};
  // Destroyed in reverse: arena (unmap), pump (stop the thread), side channel (end the session).
  std::unique_ptr<SideChannel> side_;
  std::unique_ptr<RequestPump> pump_;
  std::unique_ptr<OutputArena> arena_;
};

}  // namespace recon::client::detail
