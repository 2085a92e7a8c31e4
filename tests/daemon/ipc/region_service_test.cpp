// The side-channel protocol end to end: RegionClient in the test thread, RegionService behind
// a RegionChannel in a server thread, ShmRegistry underneath. Sessions, registration of real
// memfds, refusals that come back as typed errors, and cleanup when the client disconnects.
#include "daemon/ipc/region_service.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "daemon/ipc/message_verify.h"
#include "daemon/ipc/region_client.h"
#include "daemon/ipc/wire_convert.h"
#include "tests/daemon/ipc/test_util.h"

namespace recon::daemon {
namespace {

using testing::memfd_mapping_count;
using testing::send_with_fds;

const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));

class Marker : public RegionAttachment {};

// A one-connection server, as the daemon's loop would run it.
class SideChannelServer {
 public:
  SideChannelServer(ShmRegistry& registry, RegionChannel channel, RegionServiceOptions options = {})
      : service_(registry, std::move(options)), registry_(registry), channel_(std::move(channel)) {
    context_.client = 42;
    context_.session = Id128{0x5e55, 0x1011};
    auto peer = channel_.peer_credentials();
    if (peer.is_ok()) context_.peer = *peer;
    thread_ = std::thread([this] { run(); });
  }
  ~SideChannelServer() { thread_.join(); }

  int packets() const { return packets_.load(); }

 private:
  void run() {
    for (;;) {
      auto message = channel_.receive();
      if (!message.is_ok()) {
        // A refused packet (fds, size): answer it, keep the connection.
        if (!channel_.send(error_response(0, message.status())).is_ok()) break;
        continue;
      }
      if (message->event == ReceiveEvent::kPeerClosed) break;
      ++packets_;
      const auto answer = service_.handle(context_, std::move(message).value());
      if (!channel_.send(answer).is_ok()) break;
    }
    registry_.drop_client(context_.client);
  }

  RegionService service_;
  ShmRegistry& registry_;
  RegionChannel channel_;
  SessionContext context_;
  std::atomic<int> packets_{0};
  std::thread thread_;
};

TEST(RegionService, OpensASessionAndRegistersARegion) {
  ShmRegistry registry;
  auto [client_end, server_end] = RegionChannel::socket_pair().value();
  RegionServiceOptions options;
  options.server_version = "recond test";
  options.importer = [](const RegionInfo& info) -> std::unique_ptr<RegionAttachment> {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(info.base) % info.page_size, 0u);
    return std::make_unique<Marker>();
  };
  SideChannelServer server(registry, std::move(server_end), options);

  auto client = RegionClient::open(std::move(client_end), "unit-test");
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  EXPECT_EQ(client->session(), (Id128{0x5e55, 0x1011}));

  const uint64_t size = 4 * kPage;
  auto memfd = create_sealed_memfd("recon-service", size);
  ASSERT_TRUE(memfd.is_ok());
  auto* pixels = static_cast<uint8_t*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd->get(), 0));
  ASSERT_NE(pixels, MAP_FAILED);
  pixels[3 * 10 + 1] = 77;

  auto region = client->register_region(memfd->get(), size, "frames");
  ASSERT_TRUE(region.is_ok()) << region.status().to_string();
  EXPECT_FALSE(region->id.is_zero());
  EXPECT_EQ(region->size, size);
  EXPECT_TRUE(region->zero_copy);  // the importer attached something

  // The daemon side sees the client's pixels through the id it handed out.
  auto lease = registry.lease_image(42, region->id, {0, 1, 16, 48});
  ASSERT_TRUE(lease.is_ok()) << lease.status().to_string();
  EXPECT_EQ(lease->bytes()[31], 77);
  EXPECT_NE(lease->attachment(), nullptr);
  lease->reset();

  auto deferred = client->unregister_region(region->id);
  ASSERT_TRUE(deferred.is_ok());
  EXPECT_FALSE(*deferred);
  EXPECT_EQ(registry.stats().regions, 0u);
  ::munmap(pixels, size);
}

TEST(RegionService, ReturnsRefusalsAsTypedErrors) {
  ShmRegistry registry;
  auto [client_end, server_end] = RegionChannel::socket_pair().value();
  SideChannelServer server(registry, std::move(server_end));
  auto client = RegionClient::open(std::move(client_end), "unit-test");
  ASSERT_TRUE(client.is_ok());

  UniqueFd unsealed(::memfd_create("recon-unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(::ftruncate(unsealed.get(), static_cast<off_t>(kPage)), 0);
  auto refused = client->register_region(unsealed.get(), kPage, "");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("sealed"), std::string::npos);

  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  EXPECT_EQ(client->register_region(read_end.get(), 0, "").status().code(), StatusCode::kInvalidArgument);

  // Without an fd.
  EXPECT_EQ(client->register_region(-1, 0, "").status().code(), StatusCode::kInvalidArgument);
  // Someone else's / unknown region.
  EXPECT_EQ(client->unregister_region(Id128{9, 9}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.stats().regions, 0u);
}

TEST(RegionService, RefusesFdsOnOtherMessagesAndZeroMqOnlyRequests) {
  ShmRegistry registry;
  auto [client_end, server_end] = RegionChannel::socket_pair().value();
  SideChannelServer server(registry, std::move(server_end));
  RegionChannel client = std::move(client_end);  // closed before the server joins
  const int raw_client = client.fd();

  auto call = [&](const std::vector<uint8_t>& request, std::vector<int> fds) -> Status {
    EXPECT_TRUE(send_with_fds(raw_client, request, fds));
    auto answer = client.receive(RegionChannel::kDefaultMaxMessageBytes, 10'000);
    EXPECT_TRUE(answer.is_ok());
    auto response = verify_response(answer->bytes);
    EXPECT_TRUE(response.is_ok()) << response.status().to_string();
    if ((*response)->body_type() != wire::ResponseBody::Error) return Status::ok();
    return status_from_wire((*response)->body_as_Error());
  };

  flatbuffers::FlatBufferBuilder b;
  finish_request(b, 3, Id128{}, wire::RequestBody::GetStatus, wire::CreateGetStatus(b).Union());
  const auto get_status = to_bytes(b);
  auto memfd = create_sealed_memfd("recon-stray", kPage);
  Status status = call(get_status, {memfd->get()});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("only RegisterRegion"), std::string::npos) << status.message();

  status = call(get_status, {});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("ZeroMQ"), std::string::npos) << status.message();

  const std::vector<uint8_t> garbage(64, 0xa5);
  EXPECT_EQ(call(garbage, {}).code(), StatusCode::kInvalidArgument);

  // Two memfds in one RegisterRegion: refused before parsing, neither registered.
  flatbuffers::FlatBufferBuilder r;
  finish_request(r, 4, Id128{}, wire::RequestBody::RegisterRegion, wire::CreateRegisterRegion(r, kPage).Union());
  auto second = create_sealed_memfd("recon-stray", kPage);
  EXPECT_EQ(call(to_bytes(r), {memfd->get(), second->get()}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.stats().regions, 0u);
  // And the well-formed one still works afterwards.
  EXPECT_TRUE(call(to_bytes(r), {memfd->get()}).is_ok());
  EXPECT_EQ(registry.stats().regions, 1u);
}

TEST(RegionService, ClientDisconnectFreesItsRegions) {
  ShmRegistry registry;
  {
    auto [client_end, server_end] = RegionChannel::socket_pair().value();
    SideChannelServer server(registry, std::move(server_end));
    auto client = RegionClient::open(std::move(client_end), "short-lived");
    ASSERT_TRUE(client.is_ok());
    for (int i = 0; i < 3; ++i) {
      auto memfd = create_sealed_memfd("recon-session", kPage);
      ASSERT_TRUE(client->register_region(memfd->get(), kPage, "").is_ok());
    }
    EXPECT_EQ(memfd_mapping_count("recon-session"), 3);
    client->channel().close();  // the client process "dies"
  }                             // joins the server thread, which dropped the client
  EXPECT_EQ(memfd_mapping_count("recon-session"), 0);
  EXPECT_EQ(registry.stats().regions, 0u);
}

}  // namespace
}  // namespace recon::daemon
