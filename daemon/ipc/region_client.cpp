// region_client: sealed memfds and the client half of the side-channel protocol.
#include "daemon/ipc/region_client.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "daemon/ipc/message_verify.h"
#include "daemon/ipc/wire_convert.h"

namespace recon::daemon {
namespace {

// Sends a finished request, waits for its answer, verifies it and checks the id and type.
// The answer's bytes are returned with it: the Response pointer points into them.
struct Answer {
  std::vector<uint8_t> bytes;
  const wire::Response* response = nullptr;
};

Result<Answer> call(RegionChannel& channel, const flatbuffers::FlatBufferBuilder& builder, uint64_t request_id,
                    wire::ResponseBody expected, int fd, int timeout_ms) {
  std::span<const uint8_t> request(builder.GetBufferPointer(), builder.GetSize());
  RECON_RETURN_IF_ERROR(channel.send(request, fd));
  RECON_ASSIGN_OR_RETURN(ChannelMessage message, channel.receive(RegionChannel::kDefaultMaxMessageBytes, timeout_ms));
  if (message.event == ReceiveEvent::kPeerClosed) return unavailable("daemon closed the side channel");
  if (message.event == ReceiveEvent::kWouldBlock) {
    return unavailable("no answer from the daemon within " + std::to_string(timeout_ms) + " ms");
  }
  if (message.fd.valid()) return internal_error("daemon sent a file descriptor");
  Answer answer;
  answer.bytes = std::move(message.bytes);
  RECON_ASSIGN_OR_RETURN(answer.response, verify_response(answer.bytes, kSideChannelLimits));
  if (answer.response->body_type() == wire::ResponseBody::Error) {
    return status_from_wire(answer.response->body_as_Error());
  }
  if (answer.response->request_id() != request_id) {
    return internal_error("answer for request " + std::to_string(answer.response->request_id()) +
                          " while waiting for " + std::to_string(request_id));
  }
  if (answer.response->body_type() != expected) {
    return internal_error(std::string("unexpected answer ") + wire::EnumNameResponseBody(answer.response->body_type()));
  }
  return answer;
}

}  // namespace

uint64_t round_up_to_pages(uint64_t bytes) {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

Result<UniqueFd> create_sealed_memfd(const std::string& name, uint64_t size) {
  UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return internal_error(errno_text("memfd_create"));
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return resource_exhausted(errno_text("ftruncate of memfd"));
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return internal_error(errno_text("fcntl F_ADD_SEALS"));
  }
  return fd;
}

Result<RegionClient> RegionClient::connect(const std::string& path, std::string_view client_name, int timeout_ms) {
  RECON_ASSIGN_OR_RETURN(RegionChannel channel, RegionChannel::connect(path));
  return open(std::move(channel), client_name, timeout_ms);
}

Result<RegionClient> RegionClient::open(RegionChannel channel, std::string_view client_name, int timeout_ms) {
  RegionClient client(std::move(channel), timeout_ms);
  flatbuffers::FlatBufferBuilder builder(128);
  const auto name = builder.CreateString(client_name.data(), client_name.size());
  const auto body = wire::CreateOpenSession(builder, name);
  const uint64_t request_id = client.next_request_id_++;
  finish_request(builder, request_id, Id128{}, wire::RequestBody::OpenSession, body.Union());
  RECON_ASSIGN_OR_RETURN(Answer answer,
                         call(client.channel_, builder, request_id, wire::ResponseBody::SessionOpened, -1, timeout_ms));
  client.session_ = from_wire(answer.response->body_as_SessionOpened()->session());
  if (client.session_.is_zero()) return internal_error("daemon opened a session without a token");
  return client;
}

Result<RegisteredRegion> RegionClient::register_region(int memfd, uint64_t size, std::string_view label) {
  flatbuffers::FlatBufferBuilder builder(128);
  const auto text = builder.CreateString(label.data(), label.size());
  const auto body = wire::CreateRegisterRegion(builder, size, text);
  const uint64_t request_id = next_request_id_++;
  finish_request(builder, request_id, session_, wire::RequestBody::RegisterRegion, body.Union());
  RECON_ASSIGN_OR_RETURN(
      Answer answer, call(channel_, builder, request_id, wire::ResponseBody::RegisterRegionResult, memfd, timeout_ms_));
  const auto* result = answer.response->body_as_RegisterRegionResult();
  return RegisteredRegion{from_wire(result->region_id()), result->size(), result->zero_copy()};
}

Result<bool> RegionClient::unregister_region(const Id128& id) {
  flatbuffers::FlatBufferBuilder builder(128);
  const wire::Id128 wire_id = to_wire(id);
  const auto body = wire::CreateUnregisterRegion(builder, &wire_id);
  const uint64_t request_id = next_request_id_++;
  finish_request(builder, request_id, session_, wire::RequestBody::UnregisterRegion, body.Union());
  RECON_ASSIGN_OR_RETURN(
      Answer answer, call(channel_, builder, request_id, wire::ResponseBody::UnregisterRegionResult, -1, timeout_ms_));
  return answer.response->body_as_UnregisterRegionResult()->deferred();
}

}  // namespace recon::daemon
