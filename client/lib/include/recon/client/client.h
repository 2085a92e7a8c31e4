// recon::client::Client: a connection to recond (the recon GPU inference daemon).
//
// connect() opens a session on the regions socket (AF_UNIX SOCK_SEQPACKET; the session lives as
// long as this connection) and a ZeroMQ DEALER to the client socket, whose requests carry the
// session token. Images go through ImageBuffers (registered shared memory), answers come back
// as handles whose tensors are fetched lazily into the client's own registered output regions.
// Management calls (warmup, load_model, unload_model) use the manager socket, which only
// members of the daemon's manager group may open.
//
// Errors: every call throws recon::client::Error (see error.h). Thread safety: every Client
// method may be called from any number of threads at once; one I/O thread per Client moves all
// ZeroMQ traffic, so requests from many threads are pipelined on one connection. If the daemon
// stops or restarts, the session is gone: pending and later calls fail with UNAVAILABLE
// (source kConnection); connect again.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "recon/client/batch.h"
#include "recon/client/error.h"
#include "recon/client/export.h"
#include "recon/client/image_buffer.h"
#include "recon/client/job.h"
#include "recon/client/model_input.h"
#include "recon/client/options.h"
#include "recon/client/result.h"
#include "recon/client/retrieval.h"
#include "recon/client/status.h"
#include "recon/client/types.h"

namespace recon::client {

namespace detail {
class Core;
}

class RECON_CLIENT_API Client {
 public:
  // Connects and opens a session. Throws Error: kUnavailable/kConnection when no daemon listens,
  // kPermissionDenied when the sockets are not accessible to this user.
  static Client connect(const ConnectOptions& options = {});
  // Connects without a session (no regions socket): enough for status() and the management
  // calls, and what `reconctl status` uses. infer() and create_buffer() then throw.
  static Client connect_control(const ConnectOptions& options = {});

  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  ~Client();

  bool has_session() const;
  const SessionInfo& session() const;
  const ConnectOptions& options() const;

  // A new shared-memory region of at least `bytes` (rounded up to pages), registered with the
  // daemon. Throws Error (e.g. kResourceExhausted beyond the session's region limits).
  ImageBuffer create_buffer(uint64_t bytes, std::string_view label = "images");

  // Sends one MASt3R pair (view 1, view 2) and returns at once; the answer arrives in the
  // returned PendingResult. Both views must come from buffers of this Client.
  PendingResult infer(const ImageView& image1, const ImageView& image2, const InferOptions& options = {});
  // The generic request: any loaded model (or the built-in "match") by name, its named inputs
  // (model_input.h says which each kind reads) and parameters (retrieval: top_k; match:
  // max_matches, subsample, min_confidence), one Result back. options.model must be empty or
  // equal `model`. The released calls (infer of a pair, match, encode_retrieval) answer the same
  // tensors; this one is what a new model kind needs no new call for.
  PendingResult infer(std::string_view model, std::span<const ModelInput> inputs,
                      const std::map<std::string, std::string>& parameters = {}, const InferOptions& options = {});
  // Sends many pairs over one image list in one request (InferBatch: the daemon encodes each
  // image once and runs all pairs in one engine call) and returns at once. The answer has one
  // Result per pair; each counts against the session's handle quota until released.
  PendingBatch infer_batch(std::span<const ImageView> images, const BatchOptions& batch = {},
                           const InferOptions& options = {});
  // Matches the descriptors of a pair result on the daemon (desc_1/desc_2 never leave the GPU).
  // The answer is a new Result with "matches_1", "matches_2" (i32 [K, 2], pixel x, y),
  // "match_conf" (f32 [K]) and "pts3d_1", "pts3d_2" (f32 [K, 3]), as far as the source holds
  // desc_conf_* and pts3d_*; Result::match_count() is K. `source` must stay unreleased until
  // the answer arrives.
  PendingResult match(const Result& source, const MatchOptions& options = {});
  // Retrieval embeddings of every image (and with top_k, the most similar pairs) from the
  // daemon's retrieval model on its MASt3R encoder. The images must be prepared to one size.
  PendingRetrieval encode_retrieval(std::span<const ImageView> images, const RetrievalOptions& options = {});

  // Starts a long job on the daemon (JobOptions::job, e.g. "reconstruct" over these images) and
  // returns at once; its events and its result come through the Job (job.h). The images must stay
  // unchanged until the job ends.
  Job start_job(std::span<const ImageView> images, const JobOptions& options = {});

  // The daemon's state, devices, models, queue, throughput and latency. With include_sessions
  // the request goes to the manager socket, which also lists each client session.
  DaemonStatus status(bool include_sessions = false);

  // Management socket. `timeout` zero waits forever (warm-up on a CPU device takes minutes).
  WarmupReport warmup(std::span<const std::string> models = {}, std::span<const Resolution> resolutions = {},
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  LoadModelReport load_model(const LoadModelRequest& request,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  void unload_model(std::string_view name);

 private:
  explicit Client(std::shared_ptr<detail::Core> core);
  detail::Core& core() const;
  std::shared_ptr<detail::Core> core_;
};

}  // namespace recon::client
