// RequestFuzzer: an in-process recond (the tests' ServerHarness on the tiny model) fed with
// generated requests on its three sockets. Before fuzzing it opens a session, registers regions
// and makes a few real results, so that generated ids can name live ones; then model work is
// skipped (ServerHooks::skip_models: answered UNAVAILABLE without the device) so that each input
// costs a round trip, not an inference. Fetches and releases of the live results run for real.
//
// run_one() sends one request and requires an answer: a verified Response with the request's id
// (or id 0 for a request too broken to read one), within two minutes. Anything else, and any crash
// or sanitizer report, is a finding: run_one aborts with the input's description. An answer that
// takes over a second is reported and counted, not a finding.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tests/daemon/fuzz/request_generator.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"

namespace recon::daemon::fuzz {

class RequestFuzzer {
 public:
  // Starts the daemon and prepares the live ids; nullptr (and `error`) if that fails.
  static std::unique_ptr<RequestFuzzer> start(std::string* error);
  ~RequestFuzzer();

  void run_one(std::span<const uint8_t> data);
  // Answers seen so far, by whether they were errors, and by kind ("StatusReport",
  // "Error INVALID_ARGUMENT", ...).
  uint64_t successes() const { return successes_; }
  uint64_t errors() const { return errors_; }
  const std::map<std::string, uint64_t>& outcomes() const { return outcomes_; }
  uint64_t slow_answers() const { return slow_answers_; }
  int64_t slowest_answer_ms() const { return slowest_answer_ms_; }

 private:
  RequestFuzzer() = default;
  // The answer to `request` on its socket, or a description of what went wrong.
  bool exchange(const FuzzRequest& request, std::string* failure);

  std::atomic<bool> skip_models_{false};
  std::unique_ptr<testing::ServerHarness> harness_;
  std::unique_ptr<testing::TestClient> client_;
  std::unique_ptr<testing::TestClient> manager_;
  std::vector<std::unique_ptr<testing::TestRegion>> regions_;
  FuzzContext context_;
  uint64_t successes_ = 0;
  uint64_t errors_ = 0;
  std::map<std::string, uint64_t> outcomes_;
  uint64_t slow_answers_ = 0;
  int64_t slowest_answer_ms_ = 0;
};

}  // namespace recon::daemon::fuzz
