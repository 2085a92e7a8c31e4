// JobKind: the one table of the long jobs recond runs (StartJob). A row names the job, the kind of
// model it runs, and how a job is made from a request's input; the code of each job lives in its
// own folder (reconstruct/). A new job is its folder plus one row in job_kind.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/serving/jobs/job.h"
#include "gpu/status.h"

namespace recon::daemon {

// What the daemon lets one job take (server limits).
struct JobLimits {
  uint32_t max_images = 1000;
  uint32_t max_pairs = 20000;  // image pairs (one direction)
};

struct JobKind {
  std::string_view name;
  // The kind of model the job runs; a StartJob without a model uses the model of this name.
  std::string_view model_kind;
  // Parses the parameters and checks the input against `limits`: INVALID_ARGUMENT naming what is
  // wrong (an unknown parameter included), before anything is queued.
  Result<std::unique_ptr<Job>> (*create)(JobInput input, const JobLimits& limits);
};

// The row of `name`; nullptr for an unknown job.
const JobKind* find_job_kind(std::string_view name);
// "reconstruct, ..." for error messages.
std::string job_kind_names();

}  // namespace recon::daemon
