// ListenFds with fake LISTEN_FDS / LISTEN_PID / LISTEN_FDNAMES (each case in a forked child,
// because it must own fds 3, 4, 5), and the sockets recond binds itself when not activated.
#include "daemon/service/socket_activation.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "tests/daemon_service/test_support.h"

namespace recon::daemon {
namespace {

using testing::TempDir;

UniqueFd listening_socket(const std::string& path, int type) {
  UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.data(), path.size());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) return UniqueFd();
  if (::listen(fd.get(), 8) != 0) return UniqueFd();
  return fd;
}

// Runs `body` in a child whose fds 3.. are `fds` and whose LISTEN_* variables say so, the way
// systemd starts an activated service. The child prints its failures and exits with their count.
void run_activated(std::vector<UniqueFd> fds, const std::string& names, bool for_this_pid,
                   const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Move the sockets out of the way first, then into place (a source may already sit on 3..).
    std::vector<int> high;
    high.reserve(fds.size());
    for (UniqueFd& fd : fds) high.push_back(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 100));
    fds.clear();
    for (size_t i = 0; i < high.size(); ++i) {
      if (::dup2(high[i], SD_LISTEN_FDS_START + static_cast<int>(i)) < 0) ::_exit(100);
      ::close(high[i]);
    }
    ::setenv("LISTEN_FDS", std::to_string(high.size()).c_str(), 1);
    ::setenv("LISTEN_PID", std::to_string(for_this_pid ? ::getpid() : ::getpid() + 1).c_str(), 1);
    if (!names.empty()) ::setenv("LISTEN_FDNAMES", names.c_str(), 1);
    std::fflush(nullptr);
    ::_exit(body());
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child died with signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child reported failures (see its output above)";
}

int g_failures = 0;
#define CHILD_CHECK(condition)                                                                 \
  do {                                                                                         \
    if (!(condition)) {                                                                        \
      std::fprintf(stderr, "%s:%d: child check failed: %s\n", __FILE__, __LINE__, #condition); \
      ++g_failures;                                                                            \
    }                                                                                          \
  } while (0)

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ListenFds, HandsOutActivatedSocketsByNameAfterCheckingTheirType) {
  TempDir dir;
  std::vector<UniqueFd> fds;
  fds.push_back(listening_socket(dir.file("client.sock"), SOCK_STREAM));
  fds.push_back(listening_socket(dir.file("regions.sock"), SOCK_SEQPACKET));
  fds.push_back(listening_socket(dir.file("manager.sock"), SOCK_STREAM));
  for (const UniqueFd& fd : fds) ASSERT_TRUE(fd.valid());
  const std::string manager_path = dir.file("manager.sock");

  run_activated(std::move(fds), "client:regions:manager", true, [&] {
    auto listen_fds = ListenFds::from_environment();
    CHILD_CHECK(listen_fds.is_ok());
    if (!listen_fds.is_ok()) return 1;
    CHILD_CHECK(listen_fds->activated());
    // The variables are gone, so nothing we start inherits them.
    CHILD_CHECK(std::getenv("LISTEN_FDS") == nullptr);
    CHILD_CHECK(std::getenv("LISTEN_FDNAMES") == nullptr);

    // Wrong type: a clear error, and the fd stays unclaimed.
    auto wrong = listen_fds->take(kRegionsSocketName, UnixSocketType::kStream);
    CHILD_CHECK(!wrong.is_ok());
    if (!wrong.is_ok()) {
      const std::string& m = wrong.status().message();
      std::fprintf(stderr, "expected error: %s\n", m.c_str());
      CHILD_CHECK(contains(m, "'regions'") && contains(m, "SOCK_SEQPACKET") && contains(m, "ListenStream="));
    }

    auto client = listen_fds->take(kClientSocketName, UnixSocketType::kStream);
    CHILD_CHECK(client.is_ok() && client->has_value() && (*client)->get() == SD_LISTEN_FDS_START);
    auto regions = listen_fds->take(kRegionsSocketName, UnixSocketType::kSeqPacket);
    CHILD_CHECK(regions.is_ok() && regions->has_value() && (*regions)->get() == SD_LISTEN_FDS_START + 1);
    // Taken twice: the second time there is none.
    auto again = listen_fds->take(kClientSocketName, UnixSocketType::kStream);
    CHILD_CHECK(again.is_ok() && !again->has_value());
    CHILD_CHECK(listen_fds->unclaimed_names() == std::vector<std::string>{"manager"});

    // acquire_listener reports the activated socket's own path.
    auto manager = acquire_listener(*listen_fds, kManagerSocketName,
                                    {.path = "/nonexistent/x.sock", .type = UnixSocketType::kStream});
    CHILD_CHECK(manager.is_ok() && manager->activated && manager->path == manager_path);
    CHILD_CHECK(listen_fds->unclaimed_names().empty());
    return g_failures;
  });
}

TEST(ListenFds, IgnoresFdsMeantForAnotherProcess) {
  TempDir dir;
  std::vector<UniqueFd> fds;
  fds.push_back(listening_socket(dir.file("client.sock"), SOCK_STREAM));
  run_activated(std::move(fds), "client", false, [] {
    auto listen_fds = ListenFds::from_environment();
    CHILD_CHECK(listen_fds.is_ok() && !listen_fds->activated());
    if (listen_fds.is_ok()) {
      auto client = listen_fds->take(kClientSocketName, UnixSocketType::kStream);
      CHILD_CHECK(client.is_ok() && !client->has_value());
    }
    // Not ours, so not closed either.
    CHILD_CHECK(::fcntl(SD_LISTEN_FDS_START, F_GETFD) >= 0);
    return g_failures;
  });
}

TEST(ListenFds, RefusesTwoFdsWithOneName) {
  TempDir dir;
  std::vector<UniqueFd> fds;
  fds.push_back(listening_socket(dir.file("a.sock"), SOCK_STREAM));
  fds.push_back(listening_socket(dir.file("b.sock"), SOCK_STREAM));
  run_activated(std::move(fds), "client:client", true, [] {
    auto listen_fds = ListenFds::from_environment();
    CHILD_CHECK(!listen_fds.is_ok());
    if (!listen_fds.is_ok()) {
      std::fprintf(stderr, "expected error: %s\n", listen_fds.status().message().c_str());
      CHILD_CHECK(contains(listen_fds.status().message(), "two fds named 'client'"));
    }
    // Both were closed with the error.
    CHILD_CHECK(::fcntl(SD_LISTEN_FDS_START, F_GETFD) < 0);
    CHILD_CHECK(::fcntl(SD_LISTEN_FDS_START + 1, F_GETFD) < 0);
    return g_failures;
  });
}

TEST(ListenFds, RefusesMoreFdsThanNames) {
  TempDir dir;
  std::vector<UniqueFd> fds;
  fds.push_back(listening_socket(dir.file("a.sock"), SOCK_STREAM));
  fds.push_back(listening_socket(dir.file("b.sock"), SOCK_STREAM));
  run_activated(std::move(fds), "client", true, [] {
    auto listen_fds = ListenFds::from_environment();
    CHILD_CHECK(!listen_fds.is_ok());
    if (!listen_fds.is_ok()) {
      std::fprintf(stderr, "expected error: %s\n", listen_fds.status().message().c_str());
      CHILD_CHECK(contains(listen_fds.status().message(), "LISTEN_FDS=2 LISTEN_FDNAMES=client"));
    }
    return g_failures;
  });
}

TEST(ListenFds, IsEmptyWithoutActivation) {
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_PID");
  auto listen_fds = ListenFds::from_environment();
  ASSERT_TRUE(listen_fds.is_ok());
  EXPECT_FALSE(listen_fds->activated());
  EXPECT_TRUE(listen_fds->unclaimed_names().empty());
}

// ---- Binding ourselves ------------------------------------------------------------------------

TEST(BindUnixSocket, CreatesAListeningSocketWithTheGivenModeAndGroup) {
  TempDir dir;
  const std::string path = dir.file("client.sock");
  auto fd = bind_unix_socket({.path = path, .type = UnixSocketType::kStream, .mode = 0660, .group = ::getgid()});
  ASSERT_TRUE(fd.is_ok()) << fd.status().to_string();
  EXPECT_GT(sd_is_socket_unix(fd->get(), SOCK_STREAM, 1, path.c_str(), 0), 0);
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_gid, ::getgid());
  EXPECT_EQ(unix_socket_path(fd->get()).value(), path);
}

TEST(BindUnixSocket, MakesSeqpacketSocketsThatAcceptConnections) {
  TempDir dir;
  const std::string path = dir.file("regions.sock");
  auto fd = bind_unix_socket({.path = path, .type = UnixSocketType::kSeqPacket, .mode = 0600});
  ASSERT_TRUE(fd.is_ok()) << fd.status().to_string();
  EXPECT_GT(sd_is_socket_unix(fd->get(), SOCK_SEQPACKET, 1, nullptr, 0), 0);
  UniqueFd client(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.data(), path.size());
  EXPECT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
}

TEST(BindUnixSocket, ReplacesAStaleSocketFile) {
  TempDir dir;
  const std::string path = dir.file("client.sock");
  { ASSERT_TRUE(bind_unix_socket({.path = path}).is_ok()); }  // closed: the file stays behind
  ASSERT_EQ(::access(path.c_str(), F_OK), 0);
  auto again = bind_unix_socket({.path = path});
  EXPECT_TRUE(again.is_ok()) << again.status().to_string();
}

TEST(BindUnixSocket, NeverTakesOverALiveSocket) {
  TempDir dir;
  const std::string path = dir.file("client.sock");
  auto first = bind_unix_socket({.path = path});
  ASSERT_TRUE(first.is_ok());
  auto second = bind_unix_socket({.path = path});
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(second.status().message(), "another process is listening")) << second.status().message();
}

TEST(BindUnixSocket, NeverReplacesAFileThatIsNotASocket) {
  TempDir dir;
  const std::string path = dir.file("client.sock");
  std::ofstream(path) << "precious";
  auto fd = bind_unix_socket({.path = path});
  ASSERT_FALSE(fd.is_ok());
  EXPECT_TRUE(contains(fd.status().message(), "is not a socket")) << fd.status().message();
  std::ifstream in(path);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
}

TEST(BindUnixSocket, ExplainsAMissingDirectory) {
  auto fd = bind_unix_socket({.path = "/nonexistent-recon-dir/client.sock"});
  ASSERT_FALSE(fd.is_ok());
  EXPECT_TRUE(contains(fd.status().message(), "directory does not exist")) << fd.status().message();
}

TEST(BindUnixSocket, RefusesRelativeAbstractAndOverlongPaths) {
  EXPECT_FALSE(bind_unix_socket({.path = "client.sock"}).is_ok());
  EXPECT_FALSE(bind_unix_socket({.path = "@recon"}).is_ok());
  auto long_path = bind_unix_socket({.path = "/tmp/" + std::string(120, 'x')});
  ASSERT_FALSE(long_path.is_ok());
  EXPECT_TRUE(contains(long_path.status().message(), "longer than 107")) << long_path.status().message();
}

TEST(CheckSocketFile, NoticesASocketThatLostItsGroupOrMode) {
  TempDir dir;
  const std::string path = dir.file("client.sock");
  auto fd = bind_unix_socket({.path = path, .mode = 0660, .group = ::getgid()});
  ASSERT_TRUE(fd.is_ok());
  EXPECT_TRUE(check_socket_file(path, ::getgid(), 0660).is_ok());
  const Status wrong_group = check_socket_file(path, ::getgid() + 1, 0660);
  EXPECT_EQ(wrong_group.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(contains(wrong_group.message(), "systemd-tmpfiles --create")) << wrong_group.message();
  const Status wrong_mode = check_socket_file(path, ::getgid(), 0600);
  EXPECT_TRUE(contains(wrong_mode.message(), "mode 0660, not 0600")) << wrong_mode.message();
  EXPECT_EQ(check_socket_file(dir.file("missing.sock"), 0, 0660).code(), StatusCode::kNotFound);
}

TEST(AcquireListener, BindsTheFallbackWhenNotActivated) {
  TempDir dir;
  ListenFds none;
  const std::string path = dir.file("manager.sock");
  auto listener =
      acquire_listener(none, kManagerSocketName, {.path = path, .type = UnixSocketType::kStream, .mode = 0600});
  ASSERT_TRUE(listener.is_ok()) << listener.status().to_string();
  EXPECT_FALSE(listener->activated);
  EXPECT_EQ(listener->path, path);
  EXPECT_TRUE(listener->fd.valid());
}

TEST(AcquireListener, NamesTheSocketInErrors) {
  ListenFds none;
  auto listener = acquire_listener(none, kRegionsSocketName, {.path = "/nonexistent-recon-dir/regions.sock"});
  ASSERT_FALSE(listener.is_ok());
  EXPECT_EQ(listener.status().message().rfind("regions socket: ", 0), 0u) << listener.status().message();
}

TEST(ResolveGroup, AcceptsNamesAndNumbers) {
  EXPECT_EQ(resolve_group("root").value(), 0u);
  EXPECT_EQ(resolve_group("0").value(), 0u);
  EXPECT_EQ(resolve_group("4242").value(), 4242u);
}

TEST(ResolveGroup, ExplainsAMissingGroup) {
  auto gid = resolve_group("recon-no-such-group");
  ASSERT_FALSE(gid.is_ok());
  EXPECT_EQ(gid.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(gid.status().message(), "sysusers")) << gid.status().message();
}

// ---- Under the real tool ----------------------------------------------------------------------

// systemd-socket-activate(1) sets LISTEN_* exactly as PID 1 does for a .socket unit.
TEST(SocketActivation, AdoptsSocketsPassedBySystemdSocketActivate) {
  if (::system("command -v systemd-socket-activate >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "systemd-socket-activate is not installed";
  }
  TempDir dir;
  const std::string client = dir.file("client.sock");
  const std::string manager = dir.file("manager.sock");
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::execlp("systemd-socket-activate", "systemd-socket-activate", "-l", client.c_str(), "-l", manager.c_str(),
             "--fdname=client:manager", RECON_ACTIVATION_PROBE, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  UniqueFd read_end(out[0]);

  // It binds, then waits for the first connection before starting the probe.
  UniqueFd connection(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, client.data(), client.size());
  bool connected = false;
  for (int attempt = 0; attempt < 500 && !connected; ++attempt) {
    connected = ::connect(connection.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
    if (!connected) ::usleep(10'000);
  }
  EXPECT_TRUE(connected) << "systemd-socket-activate never listened on " << client;
  if (!connected) ::kill(child, SIGTERM);

  std::string output;
  char buffer[512];
  for (ssize_t n; (n = ::read(read_end.get(), buffer, sizeof(buffer))) > 0;)
    output.append(buffer, static_cast<size_t>(n));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_EQ(output, "client " + client + " activated\nmanager " + manager + " activated\n");
}

}  // namespace
}  // namespace recon::daemon
