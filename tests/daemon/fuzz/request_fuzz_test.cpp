// The request fuzzer's short run in CI: seeded random inputs through the same generator and
// checks as the libFuzzer target (fuzz_requests.cpp), against an in-process recond. Every input
// must be answered and the daemon must live; RECON_FUZZ_RUNS sets the count (default 20000).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "tests/daemon/fuzz/request_fuzzer.h"

namespace recon::daemon::fuzz {
namespace {

TEST(RequestFuzz, SeededRandomRequestsOnEverySocketAreAllAnswered) {
  std::string error;
  auto fuzzer = RequestFuzzer::start(&error);
  ASSERT_NE(fuzzer, nullptr) << error;
  const char* runs_env = std::getenv("RECON_FUZZ_RUNS");
  const long runs = runs_env != nullptr ? std::atol(runs_env) : 20'000;
  std::mt19937_64 random(20261126);
  std::vector<uint8_t> input;
  for (long i = 0; i < runs; ++i) {
    input.resize(random() % 512);
    for (uint8_t& byte : input) byte = static_cast<uint8_t>(random());
    fuzzer->run_one(input);  // aborts, with the request, on a finding
  }
  // Both kinds of answer were seen: the generator reaches past the verifier and the handlers.
  EXPECT_GT(fuzzer->errors(), 0u);
  EXPECT_GT(fuzzer->successes(), 0u);
  std::printf("%ld requests: %llu successes, %llu errors; %llu answers over 1 s, the slowest %lld ms\n", runs,
              static_cast<unsigned long long>(fuzzer->successes()), static_cast<unsigned long long>(fuzzer->errors()),
              static_cast<unsigned long long>(fuzzer->slow_answers()),
              static_cast<long long>(fuzzer->slowest_answer_ms()));
  for (const auto& [outcome, count] : fuzzer->outcomes()) {
    std::printf("  %-32s %llu\n", outcome.c_str(), static_cast<unsigned long long>(count));
  }
}

}  // namespace
}  // namespace recon::daemon::fuzz
