// SignalFd: SIGTERM / SIGHUP arrive as readable events, and the mask is restored afterwards.
#include "daemon/service/signals.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace recon::daemon {
namespace {

bool blocked(int signal) {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, signal) == 1;
}

bool readable(int fd, int timeout_ms = 2000) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

TEST(SignalFd, DeliversSigtermAsAnEvent) {
  auto signals = SignalFd::open();
  ASSERT_TRUE(signals.is_ok()) << signals.status().to_string();
  ASSERT_TRUE(signals->read().value() == std::nullopt);  // nothing pending yet

  ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);  // blocked: it waits in the signalfd, the test lives
  ASSERT_TRUE(readable(signals->fd()));
  auto event = signals->read();
  ASSERT_TRUE(event.is_ok()) << event.status().to_string();
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->signal, SIGTERM);
  EXPECT_EQ((*event)->sender_pid, ::getpid());
  EXPECT_EQ((*event)->sender_uid, ::getuid());
  EXPECT_EQ((*event)->action(), SignalAction::kShutdown);
  EXPECT_EQ(signals->read().value(), std::nullopt);
}

TEST(SignalFd, ReportsWhoSentTheSignal) {
  auto signals = SignalFd::open();
  ASSERT_TRUE(signals.is_ok());
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(::kill(parent, SIGINT) == 0 ? 0 : 1);  // like `systemctl stop` sending SIGTERM
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(readable(signals->fd()));
  auto event = signals->read();
  ASSERT_TRUE(event.is_ok() && event->has_value());
  EXPECT_EQ((*event)->signal, SIGINT);
  EXPECT_EQ((*event)->sender_pid, child);
  EXPECT_EQ((*event)->action(), SignalAction::kShutdown);
}

TEST(SignalFd, MeansReloadForSighup) {
  auto signals = SignalFd::open();
  ASSERT_TRUE(signals.is_ok());
  ASSERT_EQ(::kill(::getpid(), SIGHUP), 0);
  ASSERT_TRUE(readable(signals->fd()));
  auto event = signals->read();
  ASSERT_TRUE(event.is_ok() && event->has_value());
  EXPECT_EQ((*event)->action(), SignalAction::kReload);
  EXPECT_EQ(SignalEvent{SIGUSR1}.action(), SignalAction::kOther);
}

TEST(SignalFd, UnblocksOnlyWhatItBlocked) {
  sigset_t hup;
  sigemptyset(&hup);
  sigaddset(&hup, SIGHUP);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &hup, nullptr), 0);  // blocked before, by someone else
  ASSERT_FALSE(blocked(SIGTERM));
  {
    auto signals = SignalFd::open({SIGTERM, SIGHUP});
    ASSERT_TRUE(signals.is_ok());
    EXPECT_TRUE(blocked(SIGTERM));
    EXPECT_TRUE(blocked(SIGHUP));
    SignalFd moved(std::move(signals).value());  // moving hands the duty on, once
    EXPECT_TRUE(blocked(SIGTERM));
  }
  EXPECT_FALSE(blocked(SIGTERM));
  EXPECT_TRUE(blocked(SIGHUP));
  ASSERT_EQ(pthread_sigmask(SIG_UNBLOCK, &hup, nullptr), 0);
}

TEST(SignalFd, RefusesAnEmptyOrInvalidSignalList) {
  EXPECT_FALSE(SignalFd::open({}).is_ok());
  EXPECT_FALSE(SignalFd::open({0, 9999}).is_ok());
}

TEST(IgnoreSigpipe, LetsAWriteToAClosedPipeFailWithEpipe) {
  ASSERT_TRUE(ignore_sigpipe().is_ok());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  errno = 0;
  EXPECT_EQ(::write(fds[1], "x", 1), -1);
  EXPECT_EQ(errno, EPIPE);
  ::close(fds[1]);
  signal(SIGPIPE, SIG_DFL);
}

}  // namespace
}  // namespace recon::daemon
