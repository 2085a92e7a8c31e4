// Job: a long job running on the daemon (Client::start_job), e.g. "reconstruct": images in,
// cameras and one point cloud out. Its progress events arrive in order through next(); the end
// is a Result (one handle, its tensors named by the job), fetched like any other. Dropping a Job
// whose end has not arrived cancels it on the daemon. One thread at a time.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "recon/client/export.h"
#include "recon/client/result.h"
#include "recon/client/types.h"

namespace recon::client {

namespace detail {
class Call;
class Core;
}  // namespace detail

struct JobOptions {
  std::string job = "reconstruct";
  // The model it runs; empty = the job's default.
  std::string model;
  // Named parameters the job reads, e.g. {"pairs", "swin-3"}; the daemon refuses unknown ones.
  std::vector<std::pair<std::string, std::string>> parameters;
  // Every image is prepared to this size; unset = the daemon decides, as for infer().
  std::optional<Resolution> resolution;
  // Lifetime of the result handle; 0 = the daemon's default.
  std::chrono::milliseconds ttl{0};
  // The longest silence between two events before next() gives up; 0 = ConnectOptions::timeout.
  std::chrono::milliseconds timeout{0};
};

struct JobEvent {
  std::string
      stage;  // "encode", "retrieval" (a retrieval graph only), "pairs", "align-coarse", "align-fine", "outputs"
  uint64_t done = 0, total = 0;
  float loss = std::nanf("");
  std::string message;  // a warning or a stage's summary, for humans
  std::chrono::milliseconds elapsed{0};
};

class RECON_CLIENT_API Job {
 public:
  Job();
  Job(Job&&) noexcept;
  Job& operator=(Job&&) noexcept;
  ~Job();  // cancels a job whose end has not arrived

  bool valid() const { return call_ != nullptr; }
  // Waits for the next event and returns it; at the end returns nullopt and result() holds the
  // outputs. Throws Error when the job failed (kCancelled after cancel()) or went silent for
  // longer than its timeout.
  std::optional<JobEvent> next();
  bool finished() const { return finished_; }
  // The job's outputs once next() returned nullopt; throws Error(kInvalidArgument) before.
  Result& result();
  // Asks the daemon to stop the job (no wait): next() then ends in kCancelled, or in the result
  // when the job had already finished.
  void cancel();

 private:
  friend class Client;
  Job(std::shared_ptr<detail::Core> core, std::shared_ptr<detail::Call> call, uint64_t request_id);

  std::shared_ptr<detail::Core> core_;
  std::shared_ptr<detail::Call> call_;
  uint64_t request_id_ = 0;
  bool finished_ = false;
  std::optional<Result> result_;
};

}  // namespace recon::client
