// ReconstructJob: N images in, cameras and one point cloud out (DESIGN.md §4), the official
// MASt3R-SfM pipeline (docs/RECONSTRUCT.md): the pair graph, the pairwise stage on the device in
// steps of a few pairs (pairwise_stage.h), each image's canonical view streamed from its own-frame
// predictions, the sparse global alignment (gpu/reconstruct/), then the dense points of every
// image, cleaned and confidence-filtered. Its result's tensors (reconstruct_outputs.h) hold cameras,
// depth maps and points; the client writes the files people open (PLY, COLMAP, JSON).
//
// Parameters (all optional; StartJob.parameters):
//   pairs=complete | swin-W[-noncyclic] | logwin-W[-noncyclic] | oneref-R | retrieval-NA-K
//                        (pair_graph.h); retrieval runs the retrieval head on the tokens the
//                        pairs then read (each image is encoded once) and builds the graph from
//                        the embeddings' similarities
//   retrieval_model=R    the retrieval head for pairs=retrieval-…; default: the one loaded on the
//                        job's model (its backbone)
//   subsample=8          anchor grid and matcher seeds (a divisor of 16)
//   niter1=300 lr1=0.07  coarse stage (3D distances)
//   niter2=300 lr2=0.01  fine stage (2D reprojection)
//   optim=refine+depth   or coarse, refine
//   shared_intrinsics=0  one focal and principal point for every image
//   min_conf=1.5         points kept in the output cloud: canonical confidence above this
//   pairs_per_step=4     pairs of one device step (other sessions are served between steps)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "daemon/serving/jobs/job.h"
#include "daemon/serving/jobs/job_kind.h"
#include "daemon/serving/jobs/reconstruct/pair_graph.h"
#include "gpu/models/mast3r/mast3r_engine.h"
#include "gpu/reconstruct/sparse_alignment.h"

namespace recon::daemon {

struct ReconstructOptions {
  PairGraphSpec graph;
  gpu::AlignmentOptions alignment;
  float min_conf = 1.5f;
  uint32_t pairs_per_step = 4;
  std::string retrieval_model;  // empty: the retrieval head whose backbone is the job's model
};

// StartJob.parameters → options; INVALID_ARGUMENT naming the parameter that is wrong or unknown.
Result<ReconstructOptions> parse_reconstruct_options(const std::map<std::string, std::string>& parameters);

class ReconstructJob final : public Job {
 public:
  // JobKind::create.
  static Result<std::unique_ptr<Job>> create(JobInput input, const JobLimits& limits);

  Result<JobOutput> run(JobContext& context) override;

 private:
  ReconstructJob(JobInput input, ReconstructOptions options, std::vector<ImagePairIndex> pairs, uint32_t max_pairs)
      : input_(std::move(input)), options_(std::move(options)), pairs_(std::move(pairs)), max_pairs_(max_pairs) {}

  // pairs=retrieval-NA-K: the retrieval head's embeddings of every image (one device step), their
  // cosine similarities, the graph.
  Result<std::vector<ImagePairIndex>> retrieval_pairs(JobContext& context, const gpu::EncodedImages& encoded,
                                                      size_t device_index);

  JobInput input_;
  ReconstructOptions options_;
  std::vector<ImagePairIndex> pairs_;  // known at creation, except for a retrieval graph
  uint32_t max_pairs_ = 0;
};

}  // namespace recon::daemon
