// region_client: the client's side of the side channel: making a sealed memfd, opening a
// session and registering regions with the daemon. Used by librecon (client/) and the tests.
// Nothing here touches the GPU; the ZeroMQ requests that use the regions are client/'s.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/ipc/id128.h"
#include "daemon/ipc/region_channel.h"
#include "daemon/ipc/unique_fd.h"
#include "gpu/status.h"

namespace recon::daemon {

// Rounds up to a multiple of the page size (region sizes must be one).
uint64_t round_up_to_pages(uint64_t bytes);

// memfd_create(name, MFD_CLOEXEC|MFD_ALLOW_SEALING), ftruncate(size), then seals
// F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL: exactly what ShmRegistry accepts. `size` must be a
// page multiple (see round_up_to_pages).
Result<UniqueFd> create_sealed_memfd(const std::string& name, uint64_t size);

struct RegisteredRegion {
  Id128 id;
  uint64_t size = 0;
  bool zero_copy = false;
};

class RegionClient {
 public:
  static constexpr int kDefaultTimeoutMs = 10'000;

  // Connects to the daemon's side-channel socket and opens a session.
  static Result<RegionClient> connect(const std::string& path, std::string_view client_name,
                                      int timeout_ms = kDefaultTimeoutMs);
  // Opens a session on an already connected channel.
  static Result<RegionClient> open(RegionChannel channel, std::string_view client_name,
                                   int timeout_ms = kDefaultTimeoutMs);

  // The token to put into Request.session of ZeroMQ requests.
  const Id128& session() const { return session_; }
  RegionChannel& channel() { return channel_; }

  // Sends `memfd` (still owned by the caller, who keeps writing images into it) and returns the
  // region id. An Error answer comes back as its Status.
  Result<RegisteredRegion> register_region(int memfd, uint64_t size, std::string_view label);
  // True when the daemon deferred the unmap because requests still used the region.
  Result<bool> unregister_region(const Id128& id);

 private:
  RegionClient(RegionChannel channel, int timeout_ms) : channel_(std::move(channel)), timeout_ms_(timeout_ms) {}

  RegionChannel channel_;
  int timeout_ms_ = kDefaultTimeoutMs;
  Id128 session_;
  uint64_t next_request_id_ = 1;
};

}  // namespace recon::daemon
