// RegionChannel: a real memfd crosses a SOCK_SEQPACKET socket pair and maps to the same pages;
// peer credentials are read; packets with several fds, too many fds or too many bytes are
// refused with every fd closed; vanished peers are values, not signals; the listener never
// steals a live socket path.
#include "daemon/ipc/region_channel.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "daemon/ipc/region_client.h"
#include "tests/daemon/ipc/test_util.h"

namespace recon::daemon {
namespace {

using testing::open_fd_count;
using testing::send_with_fds;

const std::vector<uint8_t> kHello = {'h', 'e', 'l', 'l', 'o'};

std::pair<RegionChannel, RegionChannel> make_pair() {
  auto pair = RegionChannel::socket_pair();
  EXPECT_TRUE(pair.is_ok()) << pair.status().to_string();
  return std::move(pair).value();
}

// A fresh directory for socket files, removed at the end.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/recon-ipc-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(RegionChannel, PassesAMemfdThatMapsTheSamePages) {
  auto [client, server] = make_pair();
  const uint64_t size = round_up_to_pages(10'000);
  auto memfd = create_sealed_memfd("recon-pass", size);
  ASSERT_TRUE(memfd.is_ok());
  auto* mine = static_cast<uint8_t*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd->get(), 0));
  ASSERT_NE(mine, MAP_FAILED);
  for (uint64_t i = 0; i < size; ++i) mine[i] = static_cast<uint8_t>(i * 31);

  ASSERT_TRUE(client.send(kHello, memfd->get()).is_ok());
  auto received = server.receive();
  ASSERT_TRUE(received.is_ok()) << received.status().to_string();
  ASSERT_EQ(received->event, ReceiveEvent::kMessage);
  EXPECT_EQ(received->bytes, kHello);
  ASSERT_TRUE(received->fd.valid());
  EXPECT_NE(received->fd.get(), memfd->get());
  EXPECT_NE(::fcntl(received->fd.get(), F_GETFD) & FD_CLOEXEC, 0);  // MSG_CMSG_CLOEXEC

  struct stat a {
  }, b{};
  ASSERT_EQ(::fstat(memfd->get(), &a), 0);
  ASSERT_EQ(::fstat(received->fd.get(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(::fcntl(received->fd.get(), F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW), F_SEAL_SHRINK | F_SEAL_GROW);

  auto* theirs = static_cast<uint8_t*>(::mmap(nullptr, size, PROT_READ, MAP_SHARED, received->fd.get(), 0));
  ASSERT_NE(theirs, MAP_FAILED);
  EXPECT_EQ(std::memcmp(mine, theirs, size), 0);
  mine[5] = 0xee;
  EXPECT_EQ(theirs[5], 0xee);
  ::munmap(theirs, size);
  ::munmap(mine, size);
}

TEST(RegionChannel, ReadsPeerCredentials) {
  auto [client, server] = make_pair();
  auto cred = server.peer_credentials();
  ASSERT_TRUE(cred.is_ok());
  EXPECT_EQ(cred->pid, ::getpid());
  EXPECT_EQ(cred->uid, ::getuid());
  EXPECT_EQ(cred->gid, ::getgid());
}

TEST(RegionChannel, ListenerAcceptsAndReadsTheConnectingPeer) {
  TempDir dir;
  const std::string path = dir.path() + "/shm.sock";
  auto listener = RegionChannelListener::bind(path);
  ASSERT_TRUE(listener.is_ok()) << listener.status().to_string();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);

  auto client = RegionChannel::connect(path);
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  auto server = listener->accept();
  ASSERT_TRUE(server.is_ok());
  auto cred = server->peer_credentials();
  ASSERT_TRUE(cred.is_ok());
  EXPECT_EQ(cred->pid, ::getpid());
  ASSERT_TRUE(client->send(kHello).is_ok());
  auto received = server->receive();
  ASSERT_TRUE(received.is_ok());
  EXPECT_EQ(received->bytes, kHello);
  EXPECT_FALSE(received->fd.valid());
}

TEST(RegionChannel, ListenerNeverStealsALiveSocketButReplacesAStaleOne) {
  TempDir dir;
  const std::string path = dir.path() + "/shm.sock";
  {
    auto first = RegionChannelListener::bind(path);
    ASSERT_TRUE(first.is_ok());
    auto second = RegionChannelListener::bind(path);
    ASSERT_FALSE(second.is_ok());
    EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  }
  // The first daemon is gone; its socket file stayed behind.
  auto third = RegionChannelListener::bind(path);
  ASSERT_TRUE(third.is_ok()) << third.status().to_string();
  EXPECT_TRUE(RegionChannel::connect(path).is_ok());

  const std::string file = dir.path() + "/not-a-socket";
  UniqueFd(::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  EXPECT_EQ(RegionChannelListener::bind(file).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(::access(file.c_str(), F_OK), 0);  // untouched
  EXPECT_EQ(RegionChannelListener::bind("@abstract").status().code(), StatusCode::kInvalidArgument);
}

TEST(RegionChannel, AdoptRefusesSocketsOfTheWrongKind) {
  UniqueFd stream(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(RegionChannelListener::adopt(std::move(stream)).status().code(), StatusCode::kInvalidArgument);
  UniqueFd unbound(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  EXPECT_EQ(RegionChannelListener::adopt(std::move(unbound)).status().code(),
            StatusCode::kInvalidArgument);  // not listening
}

TEST(RegionChannel, RefusesTwoFdsInOnePacketAndClosesBoth) {
  auto [client, server] = make_pair();
  const int baseline = open_fd_count();
  {
    auto a = create_sealed_memfd("recon-two-a", 4096);
    auto b = create_sealed_memfd("recon-two-b", 4096);
    ASSERT_TRUE(send_with_fds(client.fd(), kHello, {a->get(), b->get()}));
  }  // our copies are closed; the two in flight are the receiver's to close
  auto received = server.receive();
  ASSERT_FALSE(received.is_ok());
  EXPECT_EQ(received.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(received.status().message().find("2 file descriptors"), std::string::npos);
  EXPECT_EQ(open_fd_count(), baseline);
  // The connection stays usable: packet boundaries are intact.
  ASSERT_TRUE(client.send(kHello).is_ok());
  auto next = server.receive();
  ASSERT_TRUE(next.is_ok());
  EXPECT_EQ(next->bytes, kHello);
}

TEST(RegionChannel, RefusesMoreFdsThanFitAndClosesTheOnesThatArrived) {
  auto [client, server] = make_pair();
  const int baseline = open_fd_count();
  {
    std::vector<UniqueFd> owned;
    std::vector<int> fds;
    for (size_t i = 0; i < RegionChannel::kMaxFdsSeen + 8; ++i) {
      owned.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      fds.push_back(owned.back().get());
    }
    ASSERT_TRUE(send_with_fds(client.fd(), kHello, fds));
  }
  auto received = server.receive();
  ASSERT_FALSE(received.is_ok());
  EXPECT_EQ(received.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(open_fd_count(), baseline);
}

TEST(RegionChannel, RefusesAnOversizePacketAndItsFd) {
  auto [client, server] = make_pair();
  const int baseline = open_fd_count();
  {
    std::vector<uint8_t> big(2048, 1);
    auto memfd = create_sealed_memfd("recon-big", 4096);
    ASSERT_TRUE(client.send(big, memfd->get()).is_ok());
  }
  auto received = server.receive(1024);
  ASSERT_FALSE(received.is_ok());
  EXPECT_EQ(received.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(open_fd_count(), baseline);
  ASSERT_TRUE(client.send(kHello).is_ok());
  EXPECT_EQ(server.receive(1024)->bytes, kHello);
}

TEST(RegionChannel, ReportsAPeerThatClosed) {
  auto [client, server] = make_pair();
  client.close();
  auto received = server.receive();
  ASSERT_TRUE(received.is_ok());
  EXPECT_EQ(received->event, ReceiveEvent::kPeerClosed);
}

TEST(RegionChannel, DeliversTheLastPacketOfAPeerThatDiedRightAfterSending) {
  auto [client, server] = make_pair();
  auto memfd = create_sealed_memfd("recon-last", 4096);
  ASSERT_TRUE(client.send(kHello, memfd->get()).is_ok());
  client.close();
  auto last = server.receive();
  ASSERT_TRUE(last.is_ok());
  EXPECT_EQ(last->event, ReceiveEvent::kMessage);
  EXPECT_TRUE(last->fd.valid());
  auto after = server.receive();
  ASSERT_TRUE(after.is_ok());
  EXPECT_EQ(after->event, ReceiveEvent::kPeerClosed);
}

TEST(RegionChannel, PeerThatDiesWhileWeWaitEndsTheWait) {
  auto [client, server] = make_pair();
  std::thread killer([c = std::move(client)]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    c.close();
  });
  auto received = server.receive(RegionChannel::kDefaultMaxMessageBytes, 10'000);
  killer.join();
  ASSERT_TRUE(received.is_ok());
  EXPECT_EQ(received->event, ReceiveEvent::kPeerClosed);
}

TEST(RegionChannel, SendingToAVanishedPeerIsUnavailableNotSigpipe) {
  auto [client, server] = make_pair();
  server.close();
  const Status status = client.send(kHello);  // would kill the process without MSG_NOSIGNAL
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
}

TEST(RegionChannel, TimesOutAndHonoursNonBlockingMode) {
  auto [client, server] = make_pair();
  auto waited = server.receive(1024, 10);
  ASSERT_TRUE(waited.is_ok());
  EXPECT_EQ(waited->event, ReceiveEvent::kWouldBlock);
  ASSERT_TRUE(server.set_nonblocking(true).is_ok());
  auto now = server.receive();
  ASSERT_TRUE(now.is_ok());
  EXPECT_EQ(now->event, ReceiveEvent::kWouldBlock);
}

TEST(RegionChannel, RefusesToSendAnEmptyPacket) {
  auto [client, server] = make_pair();
  EXPECT_EQ(client.send({}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace recon::daemon
