// Structure-aware request generation for the request fuzzer: turns fuzzer bytes into a
// FlatBuffers Request built through the schema, so that most inputs get past the verifier and
// reach the handlers. Every verb, every union member (and union types with their table left
// out), optional fields present or absent, values at the edges (0, 1, maxima, the tiny model's
// sizes), ids that are live, zero, random or of the wrong kind, a body of another verb under a
// verb's type, and now and then the raw bytes as they came.
#pragma once

#include <cstdint>
#include <vector>

#include "daemon/ipc/id128.h"
#include "tests/daemon/fuzz/fuzz_input.h"

namespace recon::daemon::fuzz {

// What the daemon under test holds, so that ids can be live ones.
struct FuzzContext {
  Id128 session;               // a live local session
  std::vector<Id128> regions;  // regions of that session
  uint64_t region_size = 0;    // the size of each
  std::vector<Id128> handles;  // results made before fuzzing (some may be released by then)
  uint32_t image_height = 0;   // the served model's native image size
  uint32_t image_width = 0;
};

// Which socket a request goes to.
enum class Socket { kClient, kManager, kRegions };

// What a regions-socket packet carries besides its bytes.
enum class Attachment { kNone, kSealedMemfd, kUnsealedMemfd };

struct FuzzRequest {
  Socket socket = Socket::kClient;
  Attachment attachment = Attachment::kNone;
  uint64_t request_id = 0;
  bool raw = false;  // the fuzzer's bytes as they came: the answer may carry any request id
  std::vector<uint8_t> bytes;
};

FuzzRequest generate_request(FuzzInput& in, const FuzzContext& context);

}  // namespace recon::daemon::fuzz
