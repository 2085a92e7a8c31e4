// Options of librecon: where the daemon listens (ConnectOptions) and what an inference asks for
// (InferOptions). Socket defaults equal recond's (daemon/service/config.h, systemd/*.socket).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "recon/client/export.h"
#include "recon/client/types.h"

namespace recon::client {

// The directory of the daemon's sockets when nothing else is said: /run/recon, or the value of
// the environment variable RECON_SOCKET_DIR when set (development daemons, tests, the demo).
inline constexpr const char* kDefaultSocketDir = "/run/recon";
inline constexpr const char* kSocketDirEnv = "RECON_SOCKET_DIR";
RECON_CLIENT_API std::string default_socket_dir();

struct RECON_CLIENT_API ConnectOptions {
  // Paths of the daemon's three sockets. Empty = default_socket_dir() + "/client.sock",
  // "/regions.sock", "/manager.sock". The client socket may also be a full ZeroMQ endpoint
  // ("ipc://...", "tcp://...").
  std::string client_socket;
  std::string regions_socket;
  std::string manager_socket;
  // Shown in `reconctl status` and the daemon's logs; empty = this program's name.
  std::string client_name;
  // How long a request waits for its answer before failing with UNAVAILABLE (kConnection);
  // zero waits forever. InferOptions::timeout and the manager calls may override it.
  std::chrono::milliseconds timeout{60'000};
  // Fetched tensors land in registered shared-memory regions of this size (more are added when
  // a result does not fit, each at least as large as that result).
  uint64_t output_chunk_bytes = uint64_t{64} << 20;

  // All three sockets in one directory (`recond --client-socket DIR/client.sock ...`).
  static ConnectOptions in_directory(const std::string& dir);
  // The three paths with defaults applied.
  ConnectOptions resolved() const;
};

struct InferOptions {
  // Model name; empty = "mast3r".
  std::string model;
  // Model input size; unset = the daemon decides (the image's own size when its sides are
  // multiples of 16, else the model's default).
  std::optional<Resolution> resolution;
  // Keep only these outputs; empty = all of the model's outputs.
  std::vector<std::string> outputs;
  Precision precision = Precision::kDefault;
  // The daemon gives up (UNAVAILABLE) if the request has not started within this; 0 = never.
  std::chrono::milliseconds deadline{0};
  // Lifetime of the result handle on the daemon; 0 = the daemon's default (capped by its max).
  std::chrono::milliseconds ttl{0};
  // How long PendingResult::get() waits for the answer; 0 = ConnectOptions::timeout.
  std::chrono::milliseconds timeout{0};
};

}  // namespace recon::client
