// RequestFuzzer: see request_fuzzer.h.
#include "tests/daemon/fuzz/request_fuzzer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "daemon/ipc/region_client.h"
#include "daemon/ipc/wire_convert.h"

namespace recon::daemon::fuzz {
namespace {

using testing::Answer;
using testing::ImageArg;
using testing::kTinyHeight;
using testing::kTinyWidth;

// An answer later than kSlowAnswerMs is reported (stderr and slow_answers()); one missing after
// kLostAnswerMs is a finding. The two differ because a stalled host (the disk under a burst of
// writes, a descheduled VM) delays an answer without the daemon losing it.
constexpr int64_t kSlowAnswerMs = 1'000;
constexpr int64_t kLostAnswerMs = 120'000;
constexpr uint64_t kRegionBytes = 64 << 10;

Result<UniqueFd> unsealed_memfd() {
  UniqueFd fd(::memfd_create("fuzz-unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid() || ::ftruncate(fd.get(), 4096) != 0) return internal_error("memfd_create");
  return fd;
}

std::string describe(const FuzzRequest& request) {
  static constexpr const char* kSockets[] = {"client.sock", "manager.sock", "regions.sock"};
  std::string text = std::string(kSockets[static_cast<int>(request.socket)]) + ", " +
                     std::to_string(request.bytes.size()) + " bytes, request id " + std::to_string(request.request_id) +
                     ":";
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < request.bytes.size() && i < 512; ++i) {
    text += i % 32 == 0 ? "\n  " : "";
    text += kHex[request.bytes[i] >> 4];
    text += kHex[request.bytes[i] & 15];
  }
  return text;
}

}  // namespace

std::unique_ptr<RequestFuzzer> RequestFuzzer::start(std::string* error) {
  std::unique_ptr<RequestFuzzer> f(new RequestFuzzer());
  ServerOptions options = testing::tiny_options();
  options.limits.handle_ttl = std::chrono::hours(24);  // the live results outlive the run
  ServerHooks hooks;
  hooks.skip_models = [raw = f.get()] { return raw->skip_models_.load(); };
  f->harness_ = testing::ServerHarness::start(options, hooks);
  if (!f->harness_->error().empty()) {
    *error = "the daemon did not start: " + f->harness_->error();
    return nullptr;
  }
  auto client = testing::TestClient::connect(f->harness_->dir(), "fuzz");
  auto manager = testing::TestClient::connect(f->harness_->dir(), "fuzz-manager", false, "manager.sock");
  if (!client.is_ok() || !manager.is_ok()) {
    *error = "cannot connect to the daemon";
    return nullptr;
  }
  f->client_ = std::move(client).value();
  f->manager_ = std::move(manager).value();
  f->context_.session = f->client_->session();
  f->context_.region_size = kRegionBytes;
  f->context_.image_height = kTinyHeight;
  f->context_.image_width = kTinyWidth;
  const std::vector<uint8_t> pixels = testing::test_image(kTinyHeight, kTinyWidth, 11);
  for (int i = 0; i < 2; ++i) {
    auto region = f->client_->add_region(kRegionBytes);
    if (!region.is_ok()) {
      *error = "registering a region: " + region.status().to_string();
      return nullptr;
    }
    std::memcpy(region->first->data(), pixels.data(), pixels.size());
    f->context_.regions.push_back(region->second);
    f->regions_.push_back(std::move(region->first));
  }
  for (int i = 0; i < 3; ++i) {
    const ImageArg image{f->context_.regions[0], 0, kTinyHeight, kTinyWidth, kTinyWidth * 3, {}};
    const uint64_t id = f->client_->next_id();
    auto answer = f->client_->call(testing::make_infer_pair(id, f->context_.session, image, image), id);
    if (!answer.is_ok() || answer->type() != wire::ResponseBody::InferPairResult) {
      *error = "making a live result failed";
      return nullptr;
    }
    f->context_.handles.push_back(testing::handle_id(*answer));
  }
  f->skip_models_ = true;
  return f;
}

RequestFuzzer::~RequestFuzzer() = default;

bool RequestFuzzer::exchange(const FuzzRequest& request, std::string* failure) {
  auto count = [this](const wire::Response& response) {
    const bool error = response.body_type() == wire::ResponseBody::Error;
    ++(error ? errors_ : successes_);
    ++outcomes_[error ? std::string("Error ") + wire::EnumNameErrorCode(response.body_as_Error()->code())
                      : std::string(wire::EnumNameResponseBody(response.body_type()))];
  };
  auto fail = [failure](std::string what) {
    *failure = std::move(what);
    return false;
  };
  if (request.socket == Socket::kRegions) {
    auto channel = RegionChannel::connect(harness_->dir() + "/regions.sock");
    if (!channel.is_ok()) return fail("cannot connect to regions.sock: " + channel.status().to_string());
    Result<UniqueFd> memfd = request.attachment == Attachment::kSealedMemfd     ? create_sealed_memfd("fuzz", 4096)
                             : request.attachment == Attachment::kUnsealedMemfd ? unsealed_memfd()
                                                                                : Result<UniqueFd>(UniqueFd());
    if (!memfd.is_ok()) return fail("memfd: " + memfd.status().to_string());
    if (Status sent = channel->send(request.bytes, memfd->valid() ? memfd->get() : -1); !sent.is_ok()) {
      // A packet the socket itself refuses (over its size limit) never reaches the daemon.
      if (sent.code() == StatusCode::kInvalidArgument) return true;
      return fail("send: " + sent.to_string());
    }
    auto packet = channel->receive(RegionChannel::kDefaultMaxMessageBytes, static_cast<int>(kLostAnswerMs));
    if (!packet.is_ok()) return fail("receive: " + packet.status().to_string());
    if (packet->event != ReceiveEvent::kMessage) return fail("the daemon closed the side channel unanswered");
    auto answer = verify_response(packet->bytes);
    if (!answer.is_ok()) return fail("unverifiable answer: " + answer.status().to_string());
    count(**answer);
    return true;
  }
  testing::TestClient& client = request.socket == Socket::kManager ? *manager_ : *client_;
  if (Status sent = client.send_frames({request.bytes}); !sent.is_ok()) return fail(sent.to_string());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLostAnswerMs);
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    auto answer = client.receive(static_cast<int>(std::max<int64_t>(left, 0)));
    if (!answer.is_ok()) return fail("no verifiable answer: " + answer.status().to_string());
    const wire::Response& response = *answer->response;
    const bool ours = request.raw || response.request_id() == request.request_id ||
                      (response.request_id() == 0 && response.body_type() == wire::ResponseBody::Error);
    if (!ours) return fail("an answer to request " + std::to_string(response.request_id()));
    if (response.final()) {
      count(response);
      return true;
    }
  }
}

void RequestFuzzer::run_one(std::span<const uint8_t> data) {
  FuzzInput in(data);
  const FuzzRequest request = generate_request(in, context_);
  std::string failure;
  const auto start = std::chrono::steady_clock::now();
  const bool answered = exchange(request, &failure);
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (!answered) {
    std::fprintf(stderr, "request fuzzer: %s (after %lld ms)\n  request: %s\n", failure.c_str(),
                 static_cast<long long>(ms), describe(request).c_str());
    std::abort();
  }
  slowest_answer_ms_ = std::max(slowest_answer_ms_, ms);
  if (ms > kSlowAnswerMs) {
    ++slow_answers_;
    std::fprintf(stderr, "request fuzzer: a slow answer, %lld ms\n  request: %s\n", static_cast<long long>(ms),
                 describe(request).c_str());
  }
}

}  // namespace recon::daemon::fuzz
