// JobKind: the table. See job_kind.h.
#include "daemon/serving/jobs/job_kind.h"

#include "daemon/serving/jobs/reconstruct/reconstruct_job.h"

namespace recon::daemon {
namespace {

constexpr JobKind kJobs[] = {
    {"reconstruct", "mast3r", &ReconstructJob::create},
};

}  // namespace

const JobKind* find_job_kind(std::string_view name) {
  for (const JobKind& job : kJobs) {
    if (job.name == name) return &job;
  }
  return nullptr;
}

std::string job_kind_names() {
  std::string out;
  for (const JobKind& job : kJobs) out += (out.empty() ? "" : ", ") + std::string(job.name);
  return out;
}

}  // namespace recon::daemon
