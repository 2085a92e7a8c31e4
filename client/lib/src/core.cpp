// Core: connection set-up and the request helpers shared by Client, Result and ImageBuffer.
#include "core.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

namespace recon::client::detail {
namespace {

std::string zmq_endpoint(const std::string& socket) {
  if (socket.find("://") != std::string::npos) return socket;
  return "ipc://" + socket;
}

// ZeroMQ connects lazily and retries forever, so a missing daemon would only show as a timeout.
// Checking the socket file first turns the common mistakes into a clear error at once.
void probe_stream_socket(const std::string& socket, const char* what) {
  if (socket.find("://") != std::string::npos && socket.rfind("ipc://", 0) != 0) return;  // tcp://: no probe
  const std::string path = socket.rfind("ipc://", 0) == 0 ? socket.substr(6) : socket;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient,
                std::string(what) + " socket path is invalid: '" + path + "'");
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) return;
  const int err = errno;
  const std::string message =
      std::string("cannot connect to recond's ") + what + " socket " + path + ": " + std::strerror(err);
  if (err == EACCES || err == EPERM) throw Error(ErrorCode::kPermissionDenied, ErrorSource::kConnection, message);
  if (err == ENOENT || err == ECONNREFUSED) {
    throw Error(ErrorCode::kUnavailable, ErrorSource::kConnection, message + " (is recond running?)");
  }
  throw Error(ErrorCode::kUnavailable, ErrorSource::kConnection, message);
}

std::vector<uint8_t> copy_of(const flatbuffers::FlatBufferBuilder& builder) {
  const uint8_t* data = builder.GetBufferPointer();
  return std::vector<uint8_t>(data, data + builder.GetSize());
}

}  // namespace

std::shared_ptr<Core> Core::open(const ConnectOptions& options, bool with_session) {
  std::shared_ptr<Core> core(new Core());
  core->options_ = options.resolved();
  const ConnectOptions& o = core->options_;
  if (with_session) {
    core->side_ = std::make_unique<SideChannel>(SideChannel::connect(o.regions_socket, o.timeout));
  }
  probe_stream_socket(o.client_socket, "client");
  if (with_session) {
    core->session_ = core->side_->open_session(o.client_name, core->session_info_);
  }
  core->pump_ = std::make_unique<RequestPump>(zmq_endpoint(o.client_socket), zmq_endpoint(o.manager_socket),
                                              core->side_ ? core->side_->fd() : -1);
  Core* raw = core.get();
  core->arena_ = std::make_unique<OutputArena>(
      o.output_chunk_bytes, o.output_chunk_linger,
      [raw](int fd, uint64_t size, std::string_view label) { return raw->register_region(fd, size, label); },
      [raw](const Id& region) { raw->unregister_region(region); });
  return core;
}

Core::~Core() = default;

void Core::check_open() const {
  const std::string reason = pump_->closed_reason();
  if (!reason.empty()) throw Error(ErrorCode::kUnavailable, ErrorSource::kConnection, reason);
}

std::shared_ptr<Call> Core::start(Target target, const flatbuffers::FlatBufferBuilder& finished, uint64_t request_id,
                                  std::chrono::milliseconds timeout, Call::OrphanHandler orphan) {
  auto call = std::make_shared<Call>(std::move(orphan));
  pump_->send(target, request_id, copy_of(finished), call, effective_timeout(timeout));
  return call;
}

Answer Core::call(Target target, const flatbuffers::FlatBufferBuilder& finished, uint64_t request_id,
                  wire::ResponseBody expected, const char* what, std::chrono::milliseconds timeout) {
  if (target == Target::kManager) {
    probe_stream_socket(options_.manager_socket, "manager");
  }
  Answer answer = start(target, finished, request_id, timeout)->take();
  expect_body(answer, expected, what);
  return answer;
}

void Core::release_async(const Id& handle) noexcept {
  try {
    flatbuffers::FlatBufferBuilder builder(128);
    const wire::Id128 id = to_wire(handle);
    const auto handles = builder.CreateVectorOfStructs(&id, 1);
    const auto body = wire::CreateRelease(builder, handles);
    const uint64_t request_id = next_request_id();
    finish_request(builder, request_id, session_, wire::RequestBody::Release, body.Union());
    pump_->send(Target::kClient, request_id, copy_of(builder), nullptr, effective_timeout({}));
  } catch (...) {  // best effort: the daemon frees the handle at its TTL or with the session
  }
}

RegisteredRegion Core::register_region(int memfd, uint64_t size, std::string_view label) {
  if (!side_) {
    throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient,
                "this client has no session (connect_control): it cannot register shared memory");
  }
  check_open();
  return side_->register_region(session_, memfd, size, label);
}

void Core::unregister_region(const Id& region) noexcept {
  if (!side_ || !pump_->closed_reason().empty()) return;  // the session is gone, and its regions with it
  try {
    side_->unregister_region(session_, region);
  } catch (...) {  // best effort: the region goes with the session at the latest
  }
}

}  // namespace recon::client::detail
