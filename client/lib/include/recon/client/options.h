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
  // How long a further chunk that became empty stays registered for the next fetch before it is
  // unregistered and unmapped (the first chunk always stays). Threads that fetch at once each need
  // a chunk: without the linger every one of them would register and import a fresh one.
  std::chrono::milliseconds output_chunk_linger{5'000};

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

// Which pairs an InferBatch runs over its image list.
struct BatchOptions {
  // Indices into the images; empty = the consecutive pairs (0,1), (1,2), ..., (n-2,n-1).
  std::vector<ImagePair> pairs;
  // Also run every pair swapped; the swapped pairs follow all the others (as the official
  // make_pairs(symmetrize=True) orders them).
  bool symmetric = false;
};

// Retrieval embeddings of many images (EncodeRetrieval), for choosing the pairs of a large scene.
struct RetrievalOptions {
  // The daemon's retrieval model; empty = "retrieval".
  std::string model;
  // Every image is prepared to this size (the images must end up at one size); unset = each
  // image's own size when its sides are multiples of 16, else the backbone's default.
  std::optional<Resolution> resolution;
  // > 0: also each image's top_k most similar other images (top_k < number of images).
  uint32_t top_k = 0;
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds timeout{0};
};

// Descriptor matching of a pair result on the daemon (the official fast reciprocal nearest
// neighbours, on the GPU that holds the descriptors).
struct MatchOptions {
  // At most this many matches, the most confident ones (0 = all; the daemon caps it).
  uint32_t max_matches = 0;
  // Seeds every n-th pixel in each direction (0 = the official 8).
  uint32_t subsample = 0;
  // Keep only matches whose two pixels both have a descriptor confidence ≥ this.
  float min_confidence = 0;
  // How long PendingResult::get() waits; 0 = ConnectOptions::timeout.
  std::chrono::milliseconds timeout{0};
};

}  // namespace recon::client
