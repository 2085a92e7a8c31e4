// RegionService: the daemon's side of the side-channel protocol. One verified packet in, one
// Response packet out: OpenSession → SessionOpened, RegisterRegion (+ memfd) → ShmRegistry,
// UnregisterRegion → ShmRegistry. It owns no sockets and no threads: the server's loop accepts
// connections (RegionChannelListener), assigns each a ClientId and a session token, receives
// packets (RegionChannel::receive) and sends back what handle() returns; when the connection
// closes it calls ShmRegistry::drop_client (and frees the session's result handles).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/ipc/id128.h"
#include "daemon/ipc/region_channel.h"
#include "daemon/ipc/shm_registry.h"

namespace recon::daemon {

struct SessionContext {
  ClientId client = 0;
  Id128 session;  // the token SessionOpened hands out; ZeroMQ requests carry it
  PeerCredentials peer;
};

struct RegionServiceOptions {
  std::string server_version = "recond";
  // Reported in SessionOpened (0 = unlimited); region limits come from the registry.
  uint32_t max_handles = 0;
  uint64_t max_result_bytes = 0;
  uint64_t max_message_bytes = 0;
  // Runs after a region is mapped and before its id is answered. Returns the GPU import of the
  // region's pages (zero-copy) or nullptr when the device cannot import it (staging copies).
  std::function<std::unique_ptr<RegionAttachment>(const RegionInfo&)> importer;
};

class RegionService {
 public:
  explicit RegionService(ShmRegistry& registry, RegionServiceOptions options = {});

  // Answers one received packet (event kMessage). Every failure becomes an Error answer; the
  // detail goes into it too, because all of it concerns the caller's own request.
  std::vector<uint8_t> handle(const SessionContext& session, ChannelMessage message);

 private:
  ShmRegistry& registry_;
  RegionServiceOptions options_;
};

}  // namespace recon::daemon
