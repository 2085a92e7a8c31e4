// Notifier and WatchdogPacer against a fake NOTIFY_SOCKET: a SOCK_DGRAM Unix socket this test
// binds, as systemd's manager would (serving-anchors §3.5).
#include "daemon/service/notify.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>

#include "daemon/ipc/unique_fd.h"
#include "tests/daemon_service/test_support.h"

namespace recon::daemon {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;
using testing::TempDir;

// The manager side: binds a datagram socket and points $NOTIFY_SOCKET at it for its lifetime.
class FakeNotifySocket {
 public:
  // `address` starting with '@' binds in the abstract namespace.
  explicit FakeNotifySocket(const std::string& address) : env_("NOTIFY_SOCKET", address) {
    socket_.reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    const int on = 1;
    ::setsockopt(socket_.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, address.data(), address.size());
    if (address[0] == '@') sa.sun_path[0] = '\0';
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
    bound_ = ::bind(socket_.get(), reinterpret_cast<sockaddr*>(&sa), length) == 0;
  }

  bool bound() const { return bound_; }

  // The next datagram, or nullopt after `timeout`. Closes any fd that came with it (a barrier).
  std::optional<std::string> receive(int timeout_ms = 2000) {
    pollfd p{socket_.get(), POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return std::nullopt;
    char data[4096];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(sizeof(int) * 8)];
    iovec iov{data, sizeof(data)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(socket_.get(), &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) return std::nullopt;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
          ::close(fd);
        }
      }
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        std::memcpy(&last_sender_, CMSG_DATA(c), sizeof(ucred));
      }
    }
    return std::string(data, static_cast<size_t>(n));
  }

  const ucred& last_sender() const { return last_sender_; }

 private:
  ScopedEnv env_;
  UniqueFd socket_;
  bool bound_ = false;
  ucred last_sender_{};
};

TEST(Notifier, SendsTheStartupAndShutdownMessagesInOrder) {
  TempDir dir;
  FakeNotifySocket manager(dir.file("notify"));
  ASSERT_TRUE(manager.bound());
  const Notifier notifier;
  ASSERT_TRUE(Notifier::enabled());

  ASSERT_TRUE(notifier.status("compiling pipelines 3/40").is_ok());
  ASSERT_TRUE(notifier.extend_timeout(90s).is_ok());
  ASSERT_TRUE(notifier.ready("ready: mast3r at 512x384, 512x288").is_ok());
  ASSERT_TRUE(notifier.watchdog().is_ok());
  ASSERT_TRUE(notifier.reloading().is_ok());
  ASSERT_TRUE(notifier.stopping("draining 2 requests").is_ok());

  EXPECT_EQ(manager.receive(), "STATUS=compiling pipelines 3/40");
  EXPECT_EQ(manager.receive(), "EXTEND_TIMEOUT_USEC=90000000");
  EXPECT_EQ(manager.receive(), "READY=1\nSTATUS=ready: mast3r at 512x384, 512x288");
  EXPECT_EQ(manager.receive(), "WATCHDOG=1");
  EXPECT_EQ(manager.receive(), "RELOADING=1");
  EXPECT_EQ(manager.receive(), "STOPPING=1\nSTATUS=draining 2 requests");
  EXPECT_EQ(manager.receive(100), std::nullopt);
  // systemd attributes messages by the sender's pid (NotifyAccess=main).
  EXPECT_EQ(manager.last_sender().pid, ::getpid());
}

TEST(Notifier, FlattensStatusToOneLine) {
  TempDir dir;
  FakeNotifySocket manager(dir.file("notify"));
  ASSERT_TRUE(manager.bound());
  ASSERT_TRUE(Notifier().status("line one\nline two\tend").is_ok());
  EXPECT_EQ(manager.receive(), "STATUS=line one line two end");
}

TEST(Notifier, ExtendsTimeoutByAtLeastOneMicrosecond) {
  TempDir dir;
  FakeNotifySocket manager(dir.file("notify"));
  ASSERT_TRUE(manager.bound());
  ASSERT_TRUE(Notifier().extend_timeout(0us).is_ok());
  EXPECT_EQ(manager.receive(), "EXTEND_TIMEOUT_USEC=1");
}

TEST(Notifier, ReachesAnAbstractNotifySocket) {
  const std::string name = "@recon-notify-test-" + std::to_string(::getpid());
  FakeNotifySocket manager(name);
  ASSERT_TRUE(manager.bound());
  ASSERT_TRUE(Notifier().ready().is_ok());
  EXPECT_EQ(manager.receive(), "READY=1");
}

TEST(Notifier, IsANoOpWithoutNotifySocket) {
  ScopedEnv unset("NOTIFY_SOCKET", std::nullopt);
  EXPECT_FALSE(Notifier::enabled());
  EXPECT_TRUE(Notifier().ready("ready").is_ok());
  EXPECT_TRUE(Notifier().watchdog().is_ok());
}

TEST(Notifier, ReportsAnUnreachableNotifySocket) {
  ScopedEnv bad("NOTIFY_SOCKET", "/nonexistent-dir/notify");
  const Status status = Notifier().ready();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("/nonexistent-dir/notify"), std::string::npos) << status.message();
}

TEST(WatchdogInterval, IsReadFromWatchdogUsecForThisProcess) {
  ScopedEnv usec("WATCHDOG_USEC", "30000000");
  ScopedEnv pid("WATCHDOG_PID", std::to_string(::getpid()));
  auto notifier = Notifier::from_environment();
  ASSERT_TRUE(notifier.is_ok()) << notifier.status().to_string();
  EXPECT_EQ(notifier->watchdog_interval(), std::chrono::microseconds(30s));
  EXPECT_EQ(notifier->watchdog_ping_interval(), std::chrono::microseconds(15s));
  // Left in place (sd_watchdog_enabled with unset_environment=0).
  EXPECT_NE(std::getenv("WATCHDOG_USEC"), nullptr);
}

TEST(WatchdogInterval, AppliesWithoutWatchdogPid) {
  ScopedEnv usec("WATCHDOG_USEC", "2000000");
  ScopedEnv pid("WATCHDOG_PID", std::nullopt);
  auto interval = watchdog_interval_from_environment();
  ASSERT_TRUE(interval.is_ok());
  EXPECT_EQ(*interval, std::chrono::microseconds(2s));
}

TEST(WatchdogInterval, IsOffWhenMeantForAnotherProcess) {
  ScopedEnv usec("WATCHDOG_USEC", "30000000");
  ScopedEnv pid("WATCHDOG_PID", std::to_string(::getpid() + 1));
  auto interval = watchdog_interval_from_environment();
  ASSERT_TRUE(interval.is_ok());
  EXPECT_EQ(*interval, std::nullopt);
}

TEST(WatchdogInterval, IsOffWithoutEnvironment) {
  ScopedEnv usec("WATCHDOG_USEC", std::nullopt);
  ScopedEnv pid("WATCHDOG_PID", std::nullopt);
  auto notifier = Notifier::from_environment();
  ASSERT_TRUE(notifier.is_ok());
  EXPECT_EQ(notifier->watchdog_interval(), std::nullopt);
  EXPECT_EQ(notifier->watchdog_ping_interval(), std::nullopt);
}

TEST(WatchdogInterval, MalformedValueIsAnError) {
  ScopedEnv usec("WATCHDOG_USEC", "thirty");
  ScopedEnv pid("WATCHDOG_PID", std::to_string(::getpid()));
  auto interval = watchdog_interval_from_environment();
  ASSERT_FALSE(interval.is_ok());
  EXPECT_EQ(interval.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(interval.status().message().find("WATCHDOG_USEC=thirty"), std::string::npos);
}

TEST(WatchdogPacer, PingsAtHalfTheInterval) {
  TempDir dir;
  FakeNotifySocket manager(dir.file("notify"));
  ASSERT_TRUE(manager.bound());
  const Notifier notifier(std::chrono::microseconds(10s));
  WatchdogPacer pacer(notifier);
  const auto t0 = WatchdogPacer::Clock::time_point() + 1h;

  EXPECT_EQ(pacer.time_until_due(t0), 0ms);
  EXPECT_EQ(pacer.ping_if_due(t0).value(), true);  // the first call always pings
  EXPECT_EQ(manager.receive(), "WATCHDOG=1");
  EXPECT_EQ(pacer.time_until_due(t0 + 1s), 4s);
  EXPECT_EQ(pacer.ping_if_due(t0 + 4999ms).value(), false);
  EXPECT_EQ(manager.receive(100), std::nullopt);
  EXPECT_EQ(pacer.ping_if_due(t0 + 5s).value(), true);
  EXPECT_EQ(manager.receive(), "WATCHDOG=1");
  EXPECT_EQ(pacer.time_until_due(t0 + 5s), 5s);
}

TEST(WatchdogPacer, DoesNothingWhenTheWatchdogIsOff) {
  TempDir dir;
  FakeNotifySocket manager(dir.file("notify"));
  ASSERT_TRUE(manager.bound());
  const Notifier notifier;
  WatchdogPacer pacer(notifier);
  EXPECT_EQ(pacer.time_until_due(), std::nullopt);
  EXPECT_EQ(pacer.ping_if_due().value(), false);
  EXPECT_EQ(manager.receive(100), std::nullopt);
}

TEST(WatchdogPacer, PassesASendFailureOn) {
  ScopedEnv bad("NOTIFY_SOCKET", "/nonexistent-dir/notify");
  const Notifier notifier(std::chrono::microseconds(10s));
  WatchdogPacer pacer(notifier);
  EXPECT_FALSE(pacer.ping_if_due().is_ok());
  // Not counted as a ping: the next call tries again.
  EXPECT_EQ(pacer.time_until_due(), 0ms);
}

}  // namespace
}  // namespace recon::daemon
