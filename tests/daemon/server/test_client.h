// A minimal recond client for the server tests, written against the protocol only (not client/):
// a raw ZeroMQ DEALER socket on the client (or manager) socket, the side channel through
// daemon/ipc/region_client.h, sealed memfd regions mapped for writing images and reading
// fetched tensors, and builders for the requests the tests send.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/ipc/id128.h"
#include "daemon/ipc/message_verify.h"
#include "daemon/ipc/region_client.h"
#include "gpu/status.h"
#include "schema/request_generated.h"
#include "schema/response_generated.h"

namespace recon::daemon::testing {

// One verified answer; `response` points into `bytes`.
struct Answer {
  std::vector<uint8_t> bytes;
  const wire::Response* response = nullptr;

  wire::ResponseBody type() const { return response->body_type(); }
  // The Error's code, or kOk for a success body.
  StatusCode code() const;
  std::string error_message() const;
};

// A sealed memfd mapped read-write into this process.
class TestRegion {
 public:
  static Result<std::unique_ptr<TestRegion>> create(uint64_t size, const std::string& name = "test-region");
  ~TestRegion();
  int fd() const { return fd_.get(); }
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  TestRegion() = default;
  UniqueFd fd_;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

class TestClient {
 public:
  // Connects the DEALER to dir/client.sock (or `socket`: a file name in dir, a path, or a
  // tcp:// endpoint) and, with `open_session`, the side channel to dir/regions.sock.
  static Result<std::unique_ptr<TestClient>> connect(const std::string& dir, const std::string& name,
                                                     bool open_session = true,
                                                     const std::string& socket = "client.sock");
  ~TestClient();

  const Id128& session() const { return session_; }
  RegionClient& regions() { return *regions_; }
  void close_side_channel() { regions_.reset(); }
  uint64_t next_id() { return next_id_++; }
  void set_session(const Id128& session) { session_ = session; }

  // Registers a new region of `size` bytes.
  Result<std::pair<std::unique_ptr<TestRegion>, Id128>> add_region(uint64_t size);

  // Sends `request` (one frame) and waits for the answer with `request_id`.
  Result<Answer> call(const std::vector<uint8_t>& request, uint64_t request_id, int timeout_ms = 20'000);
  // Sends raw frames (multi-part when more than one).
  Status send_frames(const std::vector<std::vector<uint8_t>>& frames);
  // The next answer, whatever its id.
  Result<Answer> receive(int timeout_ms = 20'000);

 private:
  TestClient() = default;
  void* context_ = nullptr;
  void* socket_ = nullptr;
  std::optional<RegionClient> regions_;
  Id128 session_;
  uint64_t next_id_ = 1;
};

// ---- request builders ----------------------------------------------------------------------

struct ImageArg {
  // Region image when region is non-zero, else inline `pixels` (packed).
  Id128 region;
  uint64_t offset = 0;
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t stride = 0;
  std::vector<uint8_t> pixels;
};

struct InferArgs {
  std::string model;
  std::optional<std::pair<uint32_t, uint32_t>> resolution;  // (height, width)
  std::vector<std::string> outputs;
  uint32_t ttl_ms = 0;
  uint32_t deadline_ms = 0;
};

std::vector<uint8_t> make_infer_pair(uint64_t id, const Id128& session, const ImageArg& a, const ImageArg& b,
                                     const InferArgs& args = {});
struct BatchArgs {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;  // empty = consecutive
  bool symmetric = false;
  bool stream = false;
  InferArgs infer;
};
std::vector<uint8_t> make_infer_batch(uint64_t id, const Id128& session, const std::vector<ImageArg>& images,
                                      const BatchArgs& args = {});
// One named input of an Infer: an image, or a result handle (and one of its tensors).
struct NamedArg {
  std::string name;
  std::optional<ImageArg> image;
  Id128 handle;
  std::string tensor;
};
std::vector<uint8_t> make_infer(uint64_t id, const Id128& session, const std::string& model,
                                const std::vector<NamedArg>& inputs,
                                const std::vector<std::pair<std::string, std::string>>& parameters = {},
                                const InferArgs& args = {});
std::vector<uint8_t> make_match(uint64_t id, const Id128& session, const Id128& source, uint32_t max_matches = 0,
                                uint32_t subsample = 0, float min_confidence = 0);
struct RegionDest {
  Id128 region;
  uint64_t offset = 0;
  uint64_t capacity = 0;
  uint32_t alignment = 0;
};
// nullopt destination = inline.
std::vector<uint8_t> make_fetch(uint64_t id, const Id128& session, const Id128& handle,
                                const std::vector<std::string>& tensors, const std::optional<RegionDest>& destination,
                                bool release = false);
std::vector<uint8_t> make_release(uint64_t id, const Id128& session, const std::vector<Id128>& handles);
std::vector<uint8_t> make_status(uint64_t id, bool include_sessions = false);
std::vector<uint8_t> make_warmup(uint64_t id, const std::vector<std::pair<uint32_t, uint32_t>>& resolutions = {});
std::vector<uint8_t> make_unload(uint64_t id, const std::string& name);
std::vector<uint8_t> make_load(uint64_t id, const std::string& name, const std::string& weights);
std::vector<uint8_t> make_simple(uint64_t id, const Id128& session, wire::RequestBody type);
std::vector<uint8_t> make_start_job(uint64_t id, const Id128& session, const std::string& job,
                                    const std::vector<ImageArg>& images,
                                    const std::vector<std::pair<std::string, std::string>>& parameters = {},
                                    const InferArgs& args = {});
std::vector<uint8_t> make_cancel_job(uint64_t id, const Id128& session, uint64_t job_request_id);

Id128 handle_id(const Answer& answer);  // of an InferResult, InferPairResult or MatchResult

}  // namespace recon::daemon::testing

namespace recon::daemon::testing {

// The whole HTTP answer to GET `path` from 127.0.0.1:`port` (the metrics endpoint); "" when it
// cannot connect.
std::string http_get(uint16_t port, const std::string& path);

// Polls GetStatus until `done(report)` holds; false after `timeout_ms`.
bool wait_for_status(TestClient& client, const std::function<bool(const wire::StatusReport&)>& done,
                     int timeout_ms = 10'000);

}  // namespace recon::daemon::testing
