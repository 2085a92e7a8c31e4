// Remote sessions (OpenSession over ZeroMQ, no side channel): their own limits, in all and per
// peer, which never take a local client's slot; and their end when the ZeroMQ connection that
// opened them closes, also when the kernel hands the closed connection's descriptor to the next.
#include <gtest/gtest.h>

#include <thread>

#include "daemon/ipc/wire_convert.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"

namespace recon::daemon::testing {
namespace {

constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;

// OpenSession over the client's ZeroMQ connection: the answer's code, and the token on success.
StatusCode open_remote(TestClient& client, Id128* session = nullptr, std::string* message = nullptr) {
  const uint64_t id = client.next_id();
  auto opened = client.call(make_simple(id, Id128{}, wire::RequestBody::OpenSession), id);
  if (!opened.is_ok()) {
    ADD_FAILURE() << "no answer to OpenSession: " << opened.status().to_string();
    return StatusCode::kInternal;
  }
  if (message != nullptr) *message = opened->code() == StatusCode::kOk ? "" : opened->error_message();
  if (opened->code() == StatusCode::kOk && session != nullptr) {
    *session = from_wire(opened->response->body_as_SessionOpened()->session());
  }
  return opened->code();
}

// A request that needs a live session and changes nothing: Release of no handles.
StatusCode use_session(TestClient& client, const Id128& session) {
  const uint64_t id = client.next_id();
  auto answer = client.call(make_release(id, session, {}), id);
  return answer.is_ok() ? answer->code() : StatusCode::kInternal;
}

uint32_t sessions_open(TestClient& observer) {
  uint32_t open = 0;
  wait_for_status(observer, [&](const wire::StatusReport& r) {
    open = r.sessions_open();
    return true;
  });
  return open;
}

ServerOptions remote_limits(uint32_t local, uint32_t remote, uint32_t per_peer) {
  ServerOptions options = tiny_options();
  options.limits.max_clients = local;
  options.limits.max_remote_sessions = remote;
  options.limits.max_remote_sessions_per_peer = per_peer;
  return options;
}

TEST(RemoteSessions, AnOpenSessionFloodLeavesLocalClientsTheirSlots) {
  auto harness = ServerHarness::start(remote_limits(/*local=*/2, /*remote=*/4, /*per_peer=*/3));
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  {
    // The report: eight OpenSession over client.sock, then the client exits.
    auto flood = TestClient::connect(harness->dir(), "flood", /*open_session=*/false);
    ASSERT_TRUE(flood.is_ok());
    for (int i = 0; i < 3; ++i) EXPECT_EQ(open_remote(**flood), StatusCode::kOk) << i;
    for (int i = 3; i < 8; ++i) {
      std::string message;
      EXPECT_EQ(open_remote(**flood, nullptr, &message), StatusCode::kResourceExhausted) << i;
      EXPECT_NE(message.find("uid"), std::string::npos) << message;
    }
  }
  // Both local slots are free, whatever the remote sessions did.
  auto first = TestClient::connect(harness->dir(), "local-1");
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  auto second = TestClient::connect(harness->dir(), "local-2");
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  const auto pixels = test_image(kH, kW, 5);
  const uint64_t id = (*second)->next_id();
  auto answer = (*second)->call(
      make_infer_pair(id, (*second)->session(), {{}, 0, kH, kW, 0, pixels}, {{}, 0, kH, kW, 0, pixels}), id);
  ASSERT_TRUE(answer.is_ok());
  EXPECT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
  // A third local client is over max_clients.
  auto third = TestClient::connect(harness->dir(), "local-3");
  EXPECT_FALSE(third.is_ok());
}

TEST(RemoteSessions, RemoteSessionsEndWhenTheirConnectionCloses) {
  auto harness = ServerHarness::start(remote_limits(4, 8, 3));
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto observer = TestClient::connect(harness->dir(), "observer");
  ASSERT_TRUE(observer.is_ok());
  {
    auto remote = TestClient::connect(harness->dir(), "remote", /*open_session=*/false);
    ASSERT_TRUE(remote.is_ok());
    for (int i = 0; i < 3; ++i) ASSERT_EQ(open_remote(**remote), StatusCode::kOk);
    EXPECT_EQ(sessions_open(**observer), 4u);
  }
  // The DEALER is closed: its three sessions end (not after the 10-minute idle timeout).
  EXPECT_TRUE(wait_for_status(**observer, [](const wire::StatusReport& r) { return r.sessions_open() == 1; }))
      << sessions_open(**observer) << " sessions still open";
  // The peer's slots are back.
  auto again = TestClient::connect(harness->dir(), "again", false);
  ASSERT_TRUE(again.is_ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(open_remote(**again), StatusCode::kOk) << i;
}

TEST(RemoteSessions, ANewConnectionOnAReusedDescriptorKeepsItsSession) {
  // Each round closes a connection and opens the next at once; the kernel gives the new one the
  // old descriptor. The old connection's end must not end the new one's session.
  auto harness = ServerHarness::start(remote_limits(4, 4, 4));
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  for (int round = 0; round < 20; ++round) {
    Id128 first;
    {
      auto a = TestClient::connect(harness->dir(), "a", false);
      ASSERT_TRUE(a.is_ok());
      ASSERT_EQ(open_remote(**a, &first), StatusCode::kOk) << round;
    }
    auto b = TestClient::connect(harness->dir(), "b", false);
    ASSERT_TRUE(b.is_ok());
    Id128 second;
    ASSERT_EQ(open_remote(**b, &second), StatusCode::kOk) << round;
    // Once the daemon has seen the first connection's end (its session is gone), the second
    // session must still be there.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (use_session(**b, first) != StatusCode::kNotFound && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(use_session(**b, first), StatusCode::kNotFound) << "round " << round;
    EXPECT_EQ(use_session(**b, second), StatusCode::kOk) << "round " << round;
  }
}

TEST(RemoteSessions, TcpPeersHaveATotalLimitAndEndWithTheirConnection) {
  ServerOptions options = remote_limits(4, 2, 8);
  options.tcp_endpoint = "tcp://127.0.0.1:*";
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto observer = TestClient::connect(harness->dir(), "observer");
  ASSERT_TRUE(observer.is_ok());
  {
    auto remote = TestClient::connect(harness->dir(), "tcp", false, harness->server().tcp_endpoint());
    ASSERT_TRUE(remote.is_ok());
    EXPECT_EQ(open_remote(**remote), StatusCode::kOk);
    EXPECT_EQ(open_remote(**remote), StatusCode::kOk);
    std::string message;
    EXPECT_EQ(open_remote(**remote, nullptr, &message), StatusCode::kResourceExhausted);
    EXPECT_NE(message.find("at most 2 remote sessions"), std::string::npos) << message;
  }
  EXPECT_TRUE(wait_for_status(**observer, [](const wire::StatusReport& r) { return r.sessions_open() == 1; }));
}

TEST(RemoteSessions, TheDaemonStopsCleanlyWithRemoteClientsStillConnected) {
  ServerOptions options = remote_limits(4, 4, 4);
  options.tcp_endpoint = "tcp://127.0.0.1:*";
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto local = TestClient::connect(harness->dir(), "remote", false);
  auto tcp = TestClient::connect(harness->dir(), "tcp", false, harness->server().tcp_endpoint());
  ASSERT_TRUE(local.is_ok() && tcp.is_ok());
  ASSERT_EQ(open_remote(**local), StatusCode::kOk);
  ASSERT_EQ(open_remote(**tcp), StatusCode::kOk);
  // The connections outlive the daemon: its monitors and routers close under them.
  EXPECT_EQ(harness->stop(), 0);
}

TEST(RemoteSessions, NoRemoteSessionsAtAllWhenTheLimitIsZero) {
  auto harness = ServerHarness::start(remote_limits(4, 0, 4));
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto remote = TestClient::connect(harness->dir(), "remote", false);
  ASSERT_TRUE(remote.is_ok());
  EXPECT_EQ(open_remote(**remote), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace recon::daemon::testing
