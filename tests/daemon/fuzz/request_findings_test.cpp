// What the long libFuzzer runs found (tests/daemon/fuzz/findings/, one fuzzer input per file),
// replayed in CI without sanitizers. Each fixed finding gets an assertion of its own: a misaligned
// read works on x86, and the lost answer needed a signal at the wrong moment, so "the daemon stayed
// up" would not fail without the fixes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/time.h>

#include <fstream>
#include <iterator>
#include <string>

#include "daemon/ipc/message_verify.h"
#include "tests/daemon/fuzz/request_fuzzer.h"
#include "tests/daemon/fuzz/request_generator.h"

namespace recon::daemon::fuzz {
namespace {

std::vector<uint8_t> read_finding(const std::string& name) {
  std::ifstream file(std::string(RECON_SOURCE_DIR) + "/tests/daemon/fuzz/findings/" + name, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
}

// A context like RequestFuzzer's (one session, two regions, three results); the layout of the
// generated buffer does not depend on the ids' values.
FuzzContext fuzz_context() {
  FuzzContext context;
  context.session = Id128{0x1111, 0x2222};
  context.regions = {Id128{3, 4}, Id128{5, 6}};
  context.region_size = 64 << 10;
  context.handles = {Id128{7, 8}, Id128{9, 10}, Id128{11, 12}};
  context.image_height = 48;
  context.image_width = 64;
  return context;
}

// Found 2026-11-26 (two of them, one per job of the run): another verb's table under type Release,
// whose `handles` offset then lands on a vector of 4-byte structs. The FlatBuffers verifier checks
// a vector's length for alignment, not its elements, so Release.handles (16-byte Id128 structs of
// 8-byte words) was read at an address 4 mod 8: undefined behaviour, reported by UBSan.
TEST(RequestFuzzFindings, AReleaseWhoseHandlesAreMisalignedIsRefusedAtVerification) {
  for (const char* name : {"release-misaligned-handles-1", "release-misaligned-handles-2"}) {
    const std::vector<uint8_t> input = read_finding(name);
    ASSERT_FALSE(input.empty()) << name;
    FuzzInput in(input);
    const FuzzRequest request = generate_request(in, fuzz_context());
    auto verified = copy_and_verify_request(request.bytes);
    ASSERT_FALSE(verified.is_ok()) << name;
    EXPECT_EQ(verified.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(verified.status().message().find("Release.handles is not aligned"), std::string::npos)
        << name << ": " << verified.status().to_string();
  }
}

// Found 2026-11-26 (twice, tens of minutes into runs): "no answer within 10 s", and then, with a
// 2-minute bound, "no answer within 119999 ms (after 17 ms)". libFuzzer checks for slow inputs with
// a periodic SIGALRM; when one landed while the fuzzer's test client waited in zmq_poll, the poll
// returned EINTR and the client took it for a missing answer. The daemon had answered (the same
// input alone is answered at once); the client now waits on for the time left. Here a timer
// interrupts every millisecond; the daemon's own threads take some of the signals too.
TEST(RequestFuzzFindings, ASignalWhileWaitingForAnAnswerIsNotAMissingAnswer) {
  std::string error;
  auto fuzzer = RequestFuzzer::start(&error);
  ASSERT_NE(fuzzer, nullptr) << error;
  struct sigaction action {};
  action.sa_handler = [](int) {};
  sigemptyset(&action.sa_mask);  // no SA_RESTART: an interrupted poll returns EINTR
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGALRM, &action, &previous), 0);
  const itimerval every_ms{{0, 1000}, {0, 1000}};
  ASSERT_EQ(setitimer(ITIMER_REAL, &every_ms, nullptr), 0);
  const std::vector<uint8_t> input = read_finding("unanswered-manager-request");
  constexpr int kRuns = 300;
  for (int i = 0; i < kRuns; ++i) fuzzer->run_one(input);  // aborts, with the request, on a finding
  const itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &previous, nullptr);
  EXPECT_EQ(fuzzer->successes() + fuzzer->errors(), static_cast<uint64_t>(kRuns));
}

}  // namespace
}  // namespace recon::daemon::fuzz
