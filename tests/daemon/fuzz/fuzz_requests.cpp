// libFuzzer entry of the request fuzzer (RequestFuzzer): build with clang and -DRECON_FUZZ=ON,
// run e.g. `build-fuzz/tests/daemon/fuzz/fuzz_requests -runs=10000000` (docs/DAEMON.md).
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "gpu/log.h"
#include "tests/daemon/fuzz/request_fuzzer.h"

namespace {

recon::daemon::fuzz::RequestFuzzer* fuzzer = nullptr;

// libFuzzer ends the process with exit(): the figures the run leaves besides its own stats.
void print_answer_stats() {
  std::fprintf(stderr, "request fuzzer: %llu successes, %llu errors; %llu answers over 1 s, the slowest %lld ms\n",
               static_cast<unsigned long long>(fuzzer->successes()), static_cast<unsigned long long>(fuzzer->errors()),
               static_cast<unsigned long long>(fuzzer->slow_answers()),
               static_cast<long long>(fuzzer->slowest_answer_ms()));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Warnings and errors only: at info level every one of the millions of sessions the side
  // channel opens logs its end: hundreds of MB written beside the run.
  recon::set_log_sink([](recon::LogLevel level, const std::string& message) {
    if (level >= recon::LogLevel::kWarning) std::fprintf(stderr, "recon: %s\n", message.c_str());
  });
  std::string error;
  // Lives for the whole process: libFuzzer exits without returning here.
  fuzzer = recon::daemon::fuzz::RequestFuzzer::start(&error).release();
  if (fuzzer == nullptr) {
    std::fprintf(stderr, "fuzz_requests: %s\n", error.c_str());
    std::abort();
  }
  std::atexit(print_answer_stats);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzzer->run_one({data, size});
  return 0;
}
