// JobProgressView: see job_progress.h.
#include "job_progress.h"

#include <cmath>
#include <cstdio>

#include "format.h"

namespace reconctl {

std::chrono::milliseconds remaining_time(uint64_t done, uint64_t total, std::chrono::milliseconds spent) {
  if (done == 0 || total <= done) return std::chrono::milliseconds(0);
  const double per_unit = static_cast<double>(spent.count()) / static_cast<double>(done);
  return std::chrono::milliseconds(static_cast<int64_t>(per_unit * static_cast<double>(total - done)));
}

std::string progress_bar(uint64_t done, uint64_t total, int width) {
  const int filled = total == 0 ? 0 : static_cast<int>(static_cast<double>(std::min(done, total)) * width / total);
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
}

JobProgressView::JobProgressView(bool terminal) : terminal_(terminal) {}

void JobProgressView::show(const recon::client::JobEvent& event) {
  if (event.stage != stage_) {
    if (drawn_) draw(last_, true);
    stage_ = event.stage;
    stage_start_ = last_.stage.empty() ? std::chrono::milliseconds(0) : last_.elapsed;
  }
  if (!event.message.empty()) {
    finish();
    std::fprintf(stderr, "%s: %s\n", event.stage.c_str(), event.message.c_str());
  }
  last_ = event;
  if (terminal_) draw(event, false);
  drawn_ = true;
}

void JobProgressView::finish() {
  if (drawn_) draw(last_, true);
  drawn_ = false;
}

void JobProgressView::draw(const recon::client::JobEvent& event, bool final_line) {
  if (!terminal_ && !final_line) return;
  const auto spent = event.elapsed - stage_start_;
  std::string line = event.stage;
  line.resize(std::max<size_t>(line.size(), 13), ' ');
  if (event.total > 0) {
    line += progress_bar(event.done, event.total, 24) + " " + std::to_string(event.done) + "/" +
            std::to_string(event.total);
    if (spent.count() > 0 && event.done > 0) {
      char rate[32];
      std::snprintf(rate, sizeof rate, "  %.1f/s", 1000.0 * static_cast<double>(event.done) / spent.count());
      line += rate;
    }
    if (!final_line && event.done < event.total && event.done > 0) {
      line += "  ETA " + format_ms(static_cast<double>(remaining_time(event.done, event.total, spent).count()));
    }
  }
  if (!std::isnan(event.loss)) {
    char loss[32];
    std::snprintf(loss, sizeof loss, "  loss %.4g", static_cast<double>(event.loss));
    line += loss;
  }
  if (final_line) line += "  (" + format_ms(static_cast<double>(spent.count())) + ")";
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final_line ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace reconctl
