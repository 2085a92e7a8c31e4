// How reconctl shows a long job's events: one line per stage on a terminal, redrawn in place as a
// bar with the stage's count, rate and time left ("pairs  [#####.....] 12/45  3.1/s  ETA 11 s");
// elsewhere (a pipe, a log) one line per stage when it ends and every message. Writes to stderr.
#pragma once

#include <chrono>
#include <string>

#include "recon/client/job.h"

namespace reconctl {

class JobProgressView {
 public:
  explicit JobProgressView(bool terminal);
  // Shows `event`; finishes the previous stage's line when the stage changes.
  void show(const recon::client::JobEvent& event);
  // Ends the current line (before other output).
  void finish();

 private:
  void draw(const recon::client::JobEvent& event, bool final_line);

  bool terminal_;
  std::string stage_;
  std::chrono::milliseconds stage_start_{0};
  recon::client::JobEvent last_;
  bool drawn_ = false;
};

// The ETA of a stage that did `done` of `total` units in `spent` (0 when unknown).
std::chrono::milliseconds remaining_time(uint64_t done, uint64_t total, std::chrono::milliseconds spent);
// "[#####.....]" of `width` characters.
std::string progress_bar(uint64_t done, uint64_t total, int width);

}  // namespace reconctl
