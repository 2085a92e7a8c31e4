// Server: admission of StartJob — the job is one the table knows (jobs/job_kind.h), its model is
// ready and of the kind the job runs, its images and parameters hold, and a handle for its outputs
// is reserved; then the JobRunner runs it and sends its events.
#include <map>
#include <string>

#include "daemon/server/infer_options.h"
#include "daemon/server/server.h"
#include "daemon/serving/jobs/job_kind.h"

namespace recon::daemon {
Result<std::optional<std::vector<uint8_t>>> Server::on_start_job(const wire::StartJob& body, Session& session,
                                                                 const ReplyTarget& target) {
  const std::string name = body.job()->str();  // present: required_fields.cpp
  const JobKind* kind = find_job_kind(name);
  if (kind == nullptr) return not_found("unknown job '" + name + "'; recond runs: " + job_kind_names());
  const std::string model_kind(kind->model_kind);
  RECON_ASSIGN_OR_RETURN(auto admitted,
                         admit_inference("StartJob", body.model(), model_kind.c_str(), body.options(), target));
  auto& [model, settings] = admitted;
  JobInput input;
  input.model = model.name;
  RECON_ASSIGN_OR_RETURN(
      input.images, accept_images("StartJob", body.images(), session, settings.rules, options_.limits.max_job_images));
  RECON_ASSIGN_OR_RETURN(input.parameters, request_parameters(body.parameters(), "StartJob"));
  const JobLimits limits{options_.limits.max_job_images, options_.limits.max_job_pairs};
  RECON_ASSIGN_OR_RETURN(std::unique_ptr<Job> job, kind->create(std::move(input), limits));
  JobTicket ticket;
  ticket.context = std::move(settings.context);
  ticket.context.deadline.reset();  // a job's steps are its own; only its admission had to be timely
  ticket.name = name;
  ticket.job = std::move(job);
  RECON_ASSIGN_OR_RETURN(ticket.reservation, store_.reserve(session.client));
  RECON_RETURN_IF_ERROR(jobs_->start(std::move(ticket)));
  return std::optional<std::vector<uint8_t>>();
}

}  // namespace recon::daemon
