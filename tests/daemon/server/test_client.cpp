// The tests' minimal recond client: see test_client.h.
#include "tests/daemon/server/test_client.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "daemon/ipc/wire_convert.h"

namespace recon::daemon::testing {

StatusCode Answer::code() const {
  if (response->body_type() != wire::ResponseBody::Error) return StatusCode::kOk;
  return from_wire(response->body_as_Error()->code());
}

std::string Answer::error_message() const {
  const wire::Error* error = response->body_as_Error();
  return error && error->message() ? error->message()->str() : std::string();
}

Result<std::unique_ptr<TestRegion>> TestRegion::create(uint64_t size, const std::string& name) {
  std::unique_ptr<TestRegion> region(new TestRegion());
  region->size_ = round_up_to_pages(size);
  RECON_ASSIGN_OR_RETURN(region->fd_, create_sealed_memfd(name, region->size_));
  void* data = ::mmap(nullptr, region->size_, PROT_READ | PROT_WRITE, MAP_SHARED, region->fd_.get(), 0);
  if (data == MAP_FAILED) return internal_error("mmap of the test region failed");
  region->data_ = static_cast<uint8_t*>(data);
  return region;
}

TestRegion::~TestRegion() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

Result<std::unique_ptr<TestClient>> TestClient::connect(const std::string& dir, const std::string& name,
                                                        bool open_session, const std::string& socket) {
  std::unique_ptr<TestClient> client(new TestClient());
  client->context_ = zmq_ctx_new();
  client->socket_ = zmq_socket(client->context_, ZMQ_DEALER);
  const int linger = 0;
  zmq_setsockopt(client->socket_, ZMQ_LINGER, &linger, sizeof(linger));
  const std::string endpoint = socket.rfind("tcp://", 0) == 0          ? socket
                               : socket.find('/') == std::string::npos ? "ipc://" + dir + "/" + socket
                                                                       : "ipc://" + socket;
  if (zmq_connect(client->socket_, endpoint.c_str()) != 0) {
    return unavailable(std::string("zmq_connect: ") + zmq_strerror(zmq_errno()));
  }
  if (open_session) {
    RECON_ASSIGN_OR_RETURN(RegionClient regions, RegionClient::connect(dir + "/regions.sock", name));
    client->session_ = regions.session();
    client->regions_.emplace(std::move(regions));
  }
  return client;
}

TestClient::~TestClient() {
  if (socket_ != nullptr) zmq_close(socket_);
  if (context_ != nullptr) zmq_ctx_term(context_);
}

Result<std::pair<std::unique_ptr<TestRegion>, Id128>> TestClient::add_region(uint64_t size) {
  RECON_ASSIGN_OR_RETURN(auto region, TestRegion::create(size));
  RECON_ASSIGN_OR_RETURN(RegisteredRegion registered, regions_->register_region(region->fd(), region->size(), "test"));
  return std::make_pair(std::move(region), registered.id);
}

Status TestClient::send_frames(const std::vector<std::vector<uint8_t>>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const int flags = i + 1 < frames.size() ? ZMQ_SNDMORE : 0;
    // A signal (libFuzzer's periodic SIGALRM, say) interrupts the send before the frame is queued.
    int sent;
    do {
      sent = zmq_send(socket_, frames[i].data(), frames[i].size(), flags);
    } while (sent < 0 && zmq_errno() == EINTR);
    if (sent < 0) return unavailable(std::string("zmq_send: ") + zmq_strerror(zmq_errno()));
  }
  return Status::ok();
}

Result<Answer> TestClient::receive(int timeout_ms) {
  // A signal (libFuzzer's periodic SIGALRM, say) interrupts the poll: wait on for the time left.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    zmq_pollitem_t item{socket_, 0, ZMQ_POLLIN, 0};
    const int ready = zmq_poll(&item, 1, std::max<long>(0, static_cast<long>(left.count())));
    if (ready > 0) break;
    if (ready == 0) return unavailable("no answer within " + std::to_string(timeout_ms) + " ms");
    if (zmq_errno() != EINTR) return internal_error(std::string("zmq_poll: ") + zmq_strerror(zmq_errno()));
  }
  zmq_msg_t msg;
  zmq_msg_init(&msg);
  int received;
  do {
    received = zmq_msg_recv(&msg, socket_, 0);
  } while (received < 0 && zmq_errno() == EINTR);
  if (received < 0) return internal_error("zmq_msg_recv failed");
  const auto* data = static_cast<const uint8_t*>(zmq_msg_data(&msg));
  auto verified = copy_and_verify_response(std::span<const uint8_t>(data, zmq_msg_size(&msg)));
  const bool more = zmq_msg_more(&msg);
  zmq_msg_close(&msg);
  if (more) return internal_error("answer with more than one frame");
  if (!verified.is_ok()) return verified.status();
  Answer answer;
  answer.bytes.assign(verified->bytes().begin(), verified->bytes().end());
  answer.response = flatbuffers::GetRoot<wire::Response>(answer.bytes.data());
  return answer;
}

Result<Answer> TestClient::call(const std::vector<uint8_t>& request, uint64_t request_id, int timeout_ms) {
  RECON_RETURN_IF_ERROR(send_frames({request}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    RECON_ASSIGN_OR_RETURN(Answer answer, receive(static_cast<int>(std::max<int64_t>(left, 0))));
    if (answer.response->request_id() == request_id) return answer;
  }
}

namespace {

flatbuffers::Offset<wire::Image> build_image(flatbuffers::FlatBufferBuilder& b, const ImageArg& image) {
  if (!image.region.is_zero()) {
    const wire::Id128 region = to_wire(image.region);
    const auto ref = wire::CreateImageRef(b, &region, image.offset, image.height, image.width, image.stride);
    return wire::CreateImage(b, wire::ImageSource::ImageRef, ref.Union());
  }
  const auto data = b.CreateVector(image.pixels);
  const auto in = wire::CreateInlineImage(b, image.height, image.width, wire::PixelFormat::RGB8, data);
  return wire::CreateImage(b, wire::ImageSource::InlineImage, in.Union());
}

}  // namespace

std::vector<uint8_t> make_infer_pair(uint64_t id, const Id128& session, const ImageArg& a, const ImageArg& c,
                                     const InferArgs& args) {
  flatbuffers::FlatBufferBuilder b(1024 + a.pixels.size() + c.pixels.size());
  const auto image1 = build_image(b, a);
  const auto image2 = build_image(b, c);
  std::vector<flatbuffers::Offset<flatbuffers::String>> outputs;
  for (const std::string& o : args.outputs) outputs.push_back(b.CreateString(o));
  std::optional<wire::Resolution> resolution;
  if (args.resolution) resolution = wire::Resolution(args.resolution->first, args.resolution->second);
  const auto options =
      wire::CreateInferOptionsDirect(b, resolution ? &*resolution : nullptr, outputs.empty() ? nullptr : &outputs,
                                     wire::Precision::DEFAULT, args.deadline_ms, args.ttl_ms);
  const auto body =
      wire::CreateInferPairDirect(b, args.model.empty() ? nullptr : args.model.c_str(), image1, image2, options);
  finish_request(b, id, session, wire::RequestBody::InferPair, body.Union());
  return to_bytes(b);
}

namespace {

flatbuffers::Offset<wire::InferOptions> build_options(flatbuffers::FlatBufferBuilder& b, const InferArgs& args) {
  std::vector<flatbuffers::Offset<flatbuffers::String>> outputs;
  for (const std::string& o : args.outputs) outputs.push_back(b.CreateString(o));
  std::optional<wire::Resolution> resolution;
  if (args.resolution) resolution = wire::Resolution(args.resolution->first, args.resolution->second);
  return wire::CreateInferOptionsDirect(b, resolution ? &*resolution : nullptr, outputs.empty() ? nullptr : &outputs,
                                        wire::Precision::DEFAULT, args.deadline_ms, args.ttl_ms);
}

}  // namespace

std::vector<uint8_t> make_start_job(uint64_t id, const Id128& session, const std::string& job,
                                    const std::vector<ImageArg>& images,
                                    const std::vector<std::pair<std::string, std::string>>& parameters,
                                    const InferArgs& args) {
  size_t bytes = 1024;
  for (const ImageArg& image : images) bytes += image.pixels.size() + 64;
  flatbuffers::FlatBufferBuilder b(bytes);
  std::vector<flatbuffers::Offset<wire::Image>> wire_images;
  for (const ImageArg& image : images) wire_images.push_back(build_image(b, image));
  std::vector<flatbuffers::Offset<wire::Parameter>> wire_parameters;
  for (const auto& [name, value] : parameters) {
    wire_parameters.push_back(wire::CreateParameterDirect(b, name.c_str(), value.c_str()));
  }
  const auto options = build_options(b, args);
  const auto body = wire::CreateStartJobDirect(b, job.c_str(), args.model.empty() ? nullptr : args.model.c_str(),
                                               &wire_images, &wire_parameters, options);
  finish_request(b, id, session, wire::RequestBody::StartJob, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_infer(uint64_t id, const Id128& session, const std::string& model,
                                const std::vector<NamedArg>& inputs,
                                const std::vector<std::pair<std::string, std::string>>& parameters,
                                const InferArgs& args) {
  size_t bytes = 1024;
  for (const NamedArg& input : inputs) bytes += (input.image ? input.image->pixels.size() : 0) + 128;
  flatbuffers::FlatBufferBuilder b(bytes);
  std::vector<flatbuffers::Offset<wire::NamedInput>> named;
  for (const NamedArg& input : inputs) {
    const auto name = b.CreateString(input.name);
    if (input.image) {
      const auto image = build_image(b, *input.image);
      named.push_back(wire::CreateNamedInput(b, name, wire::InputSource::Image, image.Union()));
    } else {
      const wire::Id128 handle = to_wire(input.handle);
      const auto ref = wire::CreateResultRefDirect(b, &handle, input.tensor.empty() ? nullptr : input.tensor.c_str());
      named.push_back(wire::CreateNamedInput(b, name, wire::InputSource::ResultRef, ref.Union()));
    }
  }
  std::vector<flatbuffers::Offset<wire::Parameter>> wire_parameters;
  for (const auto& [name, value] : parameters) {
    wire_parameters.push_back(wire::CreateParameterDirect(b, name.c_str(), value.c_str()));
  }
  const auto options = build_options(b, args);
  const auto body = wire::CreateInferDirect(b, model.c_str(), &named, &wire_parameters, options);
  finish_request(b, id, session, wire::RequestBody::Infer, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_cancel_job(uint64_t id, const Id128& session, uint64_t job_request_id) {
  flatbuffers::FlatBufferBuilder b(128);
  const auto body = wire::CreateCancelJob(b, job_request_id);
  finish_request(b, id, session, wire::RequestBody::CancelJob, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_infer_batch(uint64_t id, const Id128& session, const std::vector<ImageArg>& images,
                                      const BatchArgs& args) {
  size_t bytes = 1024;
  for (const ImageArg& i : images) bytes += i.pixels.size() + 128;
  flatbuffers::FlatBufferBuilder b(bytes);
  std::vector<flatbuffers::Offset<wire::Image>> wire_images;
  for (const ImageArg& i : images) wire_images.push_back(build_image(b, i));
  std::vector<wire::ImagePair> pairs;
  for (const auto& [first, second] : args.pairs) pairs.emplace_back(first, second);
  const auto options = build_options(b, args.infer);
  const auto body =
      wire::CreateInferBatchDirect(b, args.infer.model.empty() ? nullptr : args.infer.model.c_str(), &wire_images,
                                   pairs.empty() ? nullptr : &pairs, args.symmetric, options, args.stream);
  finish_request(b, id, session, wire::RequestBody::InferBatch, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_match(uint64_t id, const Id128& session, const Id128& source, uint32_t max_matches,
                                uint32_t subsample, float min_confidence) {
  flatbuffers::FlatBufferBuilder b(256);
  const wire::Id128 s = to_wire(source);
  const auto body = wire::CreateMatch(b, &s, max_matches, subsample, min_confidence);
  finish_request(b, id, session, wire::RequestBody::Match, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_fetch(uint64_t id, const Id128& session, const Id128& handle,
                                const std::vector<std::string>& tensors, const std::optional<RegionDest>& destination,
                                bool release) {
  flatbuffers::FlatBufferBuilder b(512);
  std::vector<flatbuffers::Offset<flatbuffers::String>> names;
  for (const std::string& t : tensors) names.push_back(b.CreateString(t));
  flatbuffers::Offset<void> dest;
  wire::FetchDestination type = wire::FetchDestination::InlineDestination;
  if (destination) {
    const wire::Id128 region = to_wire(destination->region);
    dest = wire::CreateRegionDestination(b, &region, destination->offset, destination->capacity, destination->alignment)
               .Union();
    type = wire::FetchDestination::RegionDestination;
  } else {
    dest = wire::CreateInlineDestination(b).Union();
  }
  const wire::Id128 h = to_wire(handle);
  const auto body = wire::CreateFetchDirect(b, &h, names.empty() ? nullptr : &names, type, dest, release);
  finish_request(b, id, session, wire::RequestBody::Fetch, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_release(uint64_t id, const Id128& session, const std::vector<Id128>& handles) {
  flatbuffers::FlatBufferBuilder b(256);
  std::vector<wire::Id128> ids;
  for (const Id128& h : handles) ids.push_back(to_wire(h));
  const auto body = wire::CreateReleaseDirect(b, &ids);
  finish_request(b, id, session, wire::RequestBody::Release, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_status(uint64_t id, bool include_sessions) {
  flatbuffers::FlatBufferBuilder b(64);
  const auto body = wire::CreateGetStatus(b, include_sessions);
  finish_request(b, id, Id128{}, wire::RequestBody::GetStatus, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_warmup(uint64_t id, const std::vector<std::pair<uint32_t, uint32_t>>& resolutions) {
  flatbuffers::FlatBufferBuilder b(128);
  std::vector<wire::Resolution> list;
  for (const auto& [h, w] : resolutions) list.emplace_back(h, w);
  const auto body = wire::CreateWarmupDirect(b, nullptr, list.empty() ? nullptr : &list);
  finish_request(b, id, Id128{}, wire::RequestBody::Warmup, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_unload(uint64_t id, const std::string& name) {
  flatbuffers::FlatBufferBuilder b(128);
  const auto body = wire::CreateUnloadModelDirect(b, name.c_str());
  finish_request(b, id, Id128{}, wire::RequestBody::UnloadModel, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_load(uint64_t id, const std::string& name, const std::string& weights) {
  flatbuffers::FlatBufferBuilder b(128);
  const auto body = wire::CreateLoadModelDirect(b, name.c_str(), nullptr, weights.c_str());
  finish_request(b, id, Id128{}, wire::RequestBody::LoadModel, body.Union());
  return to_bytes(b);
}

std::vector<uint8_t> make_simple(uint64_t id, const Id128& session, wire::RequestBody type) {
  flatbuffers::FlatBufferBuilder b(128);
  flatbuffers::Offset<void> body;
  switch (type) {
    case wire::RequestBody::InferBatch:
      body = wire::CreateInferBatch(b).Union();
      break;
    case wire::RequestBody::EncodeRetrieval:
      body = wire::CreateEncodeRetrieval(b).Union();
      break;
    case wire::RequestBody::Match:
      body = wire::CreateMatch(b).Union();
      break;
    case wire::RequestBody::RegisterRegion:
      body = wire::CreateRegisterRegion(b).Union();
      break;
    case wire::RequestBody::OpenSession:
      body = wire::CreateOpenSessionDirect(b, "remote-test").Union();
      break;
    default:
      body = wire::CreateGetStatus(b).Union();
      break;
  }
  finish_request(b, id, session, type, body);
  return to_bytes(b);
}

Id128 handle_id(const Answer& answer) {
  if (const auto* infer = answer.response->body_as_InferResult()) {
    return infer->handle() != nullptr ? from_wire(infer->handle()->id()) : Id128{};
  }
  if (const auto* match = answer.response->body_as_MatchResult()) {
    return match->handle() != nullptr ? from_wire(match->handle()->id()) : Id128{};
  }
  const auto* result = answer.response->body_as_InferPairResult();
  if (result == nullptr || result->handle() == nullptr) return {};
  return from_wire(result->handle()->id());
}

}  // namespace recon::daemon::testing

namespace recon::daemon::testing {

bool wait_for_status(TestClient& client, const std::function<bool(const wire::StatusReport&)>& done, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    const uint64_t id = client.next_id();
    auto answer = client.call(make_status(id), id, 5000);
    if (answer.is_ok() && answer->type() == wire::ResponseBody::StatusReport &&
        done(*answer->response->body_as_StatusReport())) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string http_get(uint16_t port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) out.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

}  // namespace recon::daemon::testing
