// The journald / stderr log sink, through injected senders (never the real journal).
#include "daemon/service/journal_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <string>
#include <vector>

#include "tests/daemon_service/test_support.h"

namespace recon::daemon {
namespace {

using ::testing::ElementsAre;
using testing::ScopedEnv;

// Captures what a sink sends, and restores the default sink afterwards.
struct CapturedSink {
  std::vector<std::vector<std::string>> entries;
  std::vector<std::string> lines;
  int journal_result = 0;

  LogSinkOptions options(LogTarget target, LogLevel min_level = LogLevel::kDebug) {
    LogSinkOptions o;
    o.target = target;
    o.min_level = min_level;
    o.journal_sender = [this](const std::vector<std::string>& fields) {
      entries.push_back(fields);
      return journal_result;
    };
    o.stderr_writer = [this](const std::string& line) { lines.push_back(line); };
    o.clock = [] { return std::chrono::system_clock::time_point(std::chrono::milliseconds(1234)); };
    return o;
  }
  ~CapturedSink() { set_log_sink({}); }
};

// stderr lines carry local time; pin the zone so the expected text is stable.
class UtcZone {
 public:
  UtcZone() : tz_("TZ", "UTC") { ::tzset(); }
  ~UtcZone() { ::tzset(); }

 private:
  ScopedEnv tz_;
};

TEST(JournalEntry, HasMessagePriorityIdentifierAndCustomFields) {
  EXPECT_THAT(journal_entry(LogLevel::kWarning, "Failed to import region 7 of client 1234: ENOMEM", "recond",
                            {{"RECON_CLIENT_PID", "1234"}, {"RECON_REQUEST_ID", "42"}}),
              ElementsAre("MESSAGE=Failed to import region 7 of client 1234: ENOMEM", "PRIORITY=4",
                          "SYSLOG_IDENTIFIER=recond", "RECON_CLIENT_PID=1234", "RECON_REQUEST_ID=42"));
}

TEST(JournalEntry, MapsLevelsToSyslogPriorities) {
  EXPECT_EQ(journal_priority(LogLevel::kDebug), 7);
  EXPECT_EQ(journal_priority(LogLevel::kInfo), 6);
  EXPECT_EQ(journal_priority(LogLevel::kWarning), 4);
  EXPECT_EQ(journal_priority(LogLevel::kError), 3);
}

TEST(JournalEntry, KeepsTheLastValueOfARepeatedFieldAndProtectsStandardOnes) {
  EXPECT_THAT(
      journal_entry(LogLevel::kInfo, "m", "recond", {{"RECON_MODEL", "a"}, {"MESSAGE", "spoof"}, {"recon_model", "b"}}),
      ElementsAre("MESSAGE=m", "PRIORITY=6", "SYSLOG_IDENTIFIER=recond", "RECON_MODEL=b", "RECON_MESSAGE=spoof"));
}

TEST(JournalFieldName, MakesAnyNameValid) {
  EXPECT_EQ(journal_field_name("RECON_CLIENT_PID"), "RECON_CLIENT_PID");
  EXPECT_EQ(journal_field_name("client pid"), "CLIENT_PID");
  EXPECT_EQ(journal_field_name("_SYSTEMD_UNIT"), "SYSTEMD_UNIT");  // trusted fields start with '_'
  EXPECT_EQ(journal_field_name("9lives"), "LIVES");
  EXPECT_EQ(journal_field_name("model-name"), "MODEL_NAME");
  EXPECT_EQ(journal_field_name("\xc3\xa9"), "RECON_FIELD");  // nothing valid is left
  EXPECT_EQ(journal_field_name(""), "RECON_FIELD");
  EXPECT_EQ(journal_field_name(std::string(100, 'A')).size(), 64u);
}

TEST(ScopedLogFields, NestAndDisappearWithTheirScope) {
  EXPECT_TRUE(current_log_fields().empty());
  {
    ScopedLogFields outer({{std::string(kFieldClientPid), "1234"}});
    {
      ScopedLogFields inner({{std::string(kFieldRequestId), "7"}});
      ASSERT_EQ(current_log_fields().size(), 2u);
      EXPECT_EQ(current_log_fields()[1].value, "7");
    }
    ASSERT_EQ(current_log_fields().size(), 1u);
    EXPECT_EQ(current_log_fields()[0].name, kFieldClientPid);
  }
  EXPECT_TRUE(current_log_fields().empty());
}

TEST(LogSink, SendsStructuredEntriesWithTheRequestContextToTheJournal) {
  CapturedSink captured;
  set_log_sink(make_log_sink(captured.options(LogTarget::kJournal)));
  {
    ScopedLogFields request({{std::string(kFieldClientPid), "1234"}, {std::string(kFieldRequestId), "99"}});
    log_error("request failed: out of memory");  // e.g. from deep inside gpu/
  }
  log_info("idle");
  ASSERT_EQ(captured.entries.size(), 2u);
  EXPECT_THAT(captured.entries[0],
              ElementsAre("MESSAGE=request failed: out of memory", "PRIORITY=3", "SYSLOG_IDENTIFIER=recond",
                          "RECON_CLIENT_PID=1234", "RECON_REQUEST_ID=99"));
  EXPECT_THAT(captured.entries[1], ElementsAre("MESSAGE=idle", "PRIORITY=6", "SYSLOG_IDENTIFIER=recond"));
  EXPECT_TRUE(captured.lines.empty());
}

TEST(LogSink, LogWithFieldsAddsThemToOneMessageOnly) {
  CapturedSink captured;
  set_log_sink(make_log_sink(captured.options(LogTarget::kJournal)));
  log_with_fields(LogLevel::kWarning, "Failed to import region 7", {{std::string(kFieldClientPid), "1234"}});
  log_warning("later");
  ASSERT_EQ(captured.entries.size(), 2u);
  EXPECT_EQ(captured.entries[0].back(), "RECON_CLIENT_PID=1234");
  EXPECT_EQ(captured.entries[1].size(), 3u);
}

TEST(LogSink, DropsMessagesBelowTheMinimumLevel) {
  CapturedSink captured;
  set_log_sink(make_log_sink(captured.options(LogTarget::kJournal, LogLevel::kWarning)));
  log_message(LogLevel::kDebug, "noise");
  log_info("noise");
  log_warning("kept");
  ASSERT_EQ(captured.entries.size(), 1u);
  EXPECT_EQ(captured.entries[0][0], "MESSAGE=kept");
}

TEST(LogSink, FallsBackToStderrWhenTheJournalRefuses) {
  UtcZone utc;
  CapturedSink captured;
  captured.journal_result = -EAGAIN;
  set_log_sink(make_log_sink(captured.options(LogTarget::kJournal)));
  log_warning("journal is busy");
  EXPECT_EQ(captured.entries.size(), 1u);
  EXPECT_THAT(captured.lines, ElementsAre("1970-01-01 00:00:01.234 recond warning: journal is busy\n"));
}

TEST(LogSink, WritesReadableLinesToStderrInTheForeground) {
  UtcZone utc;
  CapturedSink captured;
  set_log_sink(make_log_sink(captured.options(LogTarget::kStderr)));
  {
    ScopedLogFields request({{std::string(kFieldClientPid), "1234"}});
    log_error("cannot map region 3");
  }
  log_info("two\nlines");
  EXPECT_TRUE(captured.entries.empty());
  EXPECT_THAT(captured.lines,
              ElementsAre("1970-01-01 00:00:01.234 recond error: cannot map region 3 [RECON_CLIENT_PID=1234]\n",
                          "1970-01-01 00:00:01.234 recond info: two\n  lines\n"));
}

TEST(StderrLine, OmitsTheTimestampWhenNoneIsGiven) {
  EXPECT_EQ(stderr_line(LogLevel::kDebug, "x", "recond", {}, std::nullopt), "recond debug: x\n");
}

TEST(DetectLogTarget, ChoosesTheJournalOnlyWhenStderrIsTheJournalStream) {
  struct stat st {};
  ASSERT_EQ(::fstat(STDERR_FILENO, &st), 0);
  const std::string stderr_id = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  {
    ScopedEnv stream("JOURNAL_STREAM", stderr_id);
    EXPECT_EQ(detect_log_target(false), LogTarget::kJournal);
    EXPECT_EQ(detect_log_target(true), LogTarget::kStderr);  // --foreground wins
  }
  {
    ScopedEnv stream("JOURNAL_STREAM", std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1));
    EXPECT_EQ(detect_log_target(false), LogTarget::kStderr);  // inherited, but stderr was redirected
  }
  {
    ScopedEnv stream("JOURNAL_STREAM", "garbage");
    EXPECT_EQ(detect_log_target(false), LogTarget::kStderr);
  }
  {
    ScopedEnv stream("JOURNAL_STREAM", std::nullopt);
    EXPECT_EQ(detect_log_target(false), LogTarget::kStderr);
  }
}

}  // namespace
}  // namespace recon::daemon
