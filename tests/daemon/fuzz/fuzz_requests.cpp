// libFuzzer entry of the request fuzzer (RequestFuzzer): build with clang and -DRECON_FUZZ=ON,
// run e.g. `build-fuzz/tests/daemon/fuzz/fuzz_requests -runs=10000000` (docs/DAEMON.md).
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "tests/daemon/fuzz/request_fuzzer.h"

namespace {

recon::daemon::fuzz::RequestFuzzer* fuzzer = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string error;
  // Lives for the whole process: libFuzzer exits without returning here.
  fuzzer = recon::daemon::fuzz::RequestFuzzer::start(&error).release();
  if (fuzzer == nullptr) {
    std::fprintf(stderr, "fuzz_requests: %s\n", error.c_str());
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzzer->run_one({data, size});
  return 0;
}
