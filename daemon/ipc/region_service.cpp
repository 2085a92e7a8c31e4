// RegionService: side-channel request dispatch.
#include "daemon/ipc/region_service.h"

#include <utility>

#include "daemon/ipc/message_verify.h"
#include "daemon/ipc/wire_convert.h"
#include "schema/protocol.h"

namespace recon::daemon {

RegionService::RegionService(ShmRegistry& registry, RegionServiceOptions options)
    : registry_(registry), options_(std::move(options)) {}

std::vector<uint8_t> RegionService::handle(const SessionContext& session, ChannelMessage message) {
  uint64_t request_id = 0;
  auto verified = verify_request(message.bytes, kSideChannelLimits, &request_id);
  if (!verified.is_ok()) return error_response(request_id, verified.status());
  const wire::Request* request = *verified;
  const wire::RequestBody type = request->body_type();
  if (message.fd.valid() && type != wire::RequestBody::RegisterRegion) {
    // `message.fd` closes when `message` goes.
    return error_response(
        request_id, invalid_argument(std::string("a file descriptor came with ") + wire::EnumNameRequestBody(type) +
                                     "; only RegisterRegion carries one"));
  }

  flatbuffers::FlatBufferBuilder builder(256);
  switch (type) {
    case wire::RequestBody::OpenSession: {
      const RegistryLimits& limits = registry_.limits();
      const auto wire_limits =
          wire::CreateSessionLimits(builder, limits.max_regions_per_client, limits.max_bytes_per_client,
                                    options_.max_handles, options_.max_result_bytes, options_.max_message_bytes);
      const wire::Id128 token = to_wire(session.session);
      const auto body = wire::CreateSessionOpenedDirect(builder, &token, wire_limits, options_.server_version.c_str(),
                                                        wire::kMinProtocolVersion, wire::kProtocolVersion);
      finish_response(builder, request_id, wire::ResponseBody::SessionOpened, body.Union());
      return to_bytes(builder);
    }
    case wire::RequestBody::RegisterRegion: {
      const auto* body = request->body_as_RegisterRegion();
      if (!message.fd.valid()) {
        return error_response(request_id, invalid_argument("RegisterRegion came without a memfd (SCM_RIGHTS)"));
      }
      std::string label = body->label() ? body->label()->str() : std::string();
      auto info = registry_.register_region(session.client, std::move(message.fd), body->size(), std::move(label));
      if (!info.is_ok()) {
        return error_response(request_id, info.status().with_context("registering region"));
      }
      bool zero_copy = false;
      if (options_.importer) {
        if (auto attachment = options_.importer(*info)) {
          zero_copy = registry_.attach(session.client, info->id, std::move(attachment)).is_ok();
        }
      }
      const wire::Id128 id = to_wire(info->id);
      const auto result = wire::CreateRegisterRegionResult(builder, &id, info->size, zero_copy);
      finish_response(builder, request_id, wire::ResponseBody::RegisterRegionResult, result.Union());
      return to_bytes(builder);
    }
    case wire::RequestBody::UnregisterRegion: {
      const auto* body = request->body_as_UnregisterRegion();
      auto deferred = registry_.unregister_region(session.client, from_wire(body->region_id()));
      if (!deferred.is_ok()) return error_response(request_id, deferred.status());
      const auto result = wire::CreateUnregisterRegionResult(builder, *deferred);
      finish_response(builder, request_id, wire::ResponseBody::UnregisterRegionResult, result.Union());
      return to_bytes(builder);
    }
    default:
      return error_response(request_id, invalid_argument(std::string(wire::EnumNameRequestBody(type)) +
                                                         " is not served on the side channel; send it over ZeroMQ"));
  }
}

}  // namespace recon::daemon
