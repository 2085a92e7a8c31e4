// Runs one engine call's work on the GPU: encoder steps (a chunk of images of one size through a
// Mast3rEncoder) on the second compute queue (on the compute queue when there is only one), pair
// steps (Mast3rForward on tokens the encoder steps produced) on the compute queue, ordered by the
// graphs' timeline semaphores so that the encoder of the next images overlaps the decoder and heads
// of the current pair; each pair step's output graph writes the step's own output tensors after
// its pair graph. Copies in are small command buffers submitted with each graph run.
// It decides nothing about grouping or order: the engine plans the steps; this runs them and
// reports per-step GPU timings and the whole run's GPU span.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "gpu/models/mast3r/mast3r_batch_plan.h"
#include "gpu/models/mast3r/mast3r_encoder.h"
#include "gpu/models/mast3r/mast3r_forward.h"

namespace recon::gpu {

using StageTimes = std::vector<std::pair<std::string, double>>;

// Where an image's uint8 [H, W, 3] bytes are on the device.
struct ImageSource {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
};

// An encoder run; one without an encoder ran before (EncodedImages): its tokens are ready.
struct EncodeStep {
  Mast3rEncoder* encoder = nullptr;  // its batch equals images.size()
  std::vector<int> images;           // indices into the call's image sources, one per encoder row
  Tensor tokens;                     // [B, N, C]: where the chunk's encoder output is copied
  StageTimes timings;                // filled by the run
};

struct PairStep {
  Mast3rForward* forward = nullptr;
  std::vector<std::array<TokenRow, 2>> rows;  // per batch row, view 1 and view 2 tokens
  int ready_after = 0;                        // the last encode step it reads (steps run in this order)
  Mast3rOutputs outputs;                      // the step's own output tensors (allocated by the run)
  StageTimes timings;                         // filled by the run
  double done_ms = 0;                         // when the host saw it finish, from the run's start
};

class Mast3rBatchRunner {
 public:
  explicit Mast3rBatchRunner(Runtime& rt) : rt_(rt) {}
  ~Mast3rBatchRunner();  // waits for everything it submitted
  Mast3rBatchRunner(const Mast3rBatchRunner&) = delete;
  Mast3rBatchRunner& operator=(const Mast3rBatchRunner&) = delete;

  // Runs every encode step in order, each pair step (sorted by ready_after) once the encode steps
  // it reads are submitted, and waits for all of it.
  Status run(std::span<const ImageSource> images, std::vector<EncodeStep>& encodes, std::vector<PairStep>& pairs);

  // After run(): GPU time from the first copy in to the end of the last step, gaps between the
  // graphs and the copies included (0 where the device has no timestamps). The steps' timings cover the
  // graphs only; the caller's wall time minus this span is the host's share.
  double gpu_span_ms() const { return gpu_span_ms_; }

 private:
  Status submit_encode(std::span<const ImageSource> images, EncodeStep& step);
  Status submit_pair(const std::vector<EncodeStep>& encodes, PairStep& step);
  // Waits for the graph's previous run (a command buffer cannot be pending twice) and hands its
  // GPU timings to the step that ran it.
  Status finish_previous(Graph& graph);
  Result<VkCommandBuffer> begin_commands();
  Status end_commands(VkCommandBuffer cmd);
  // Span timestamps: the run's first command buffer resets the pool and writes query 0; the
  // command buffer after each step's last graph writes the next query at its end.
  Status start_span(size_t command_buffers_out);
  void mark_span_start(VkCommandBuffer cmd);
  void mark_span_end(VkCommandBuffer cmd);
  Status read_span();
  double elapsed_ms() const;

  struct Pending {
    Graph* graph;
    uint64_t value;
    StageTimes* timings;
    double* done_ms;  // set when the step's last graph finishes; null for the others
    bool append;      // the step's second graph: its timings follow the first one's
  };

  Runtime& rt_;
  VkCommandPool pool_ = VK_NULL_HANDLE;  // the copies' command buffers, freed with the pool
  std::vector<Pending> pending_;         // the last unfinished run of each graph
  std::vector<uint64_t> encode_values_;  // timeline value of each submitted encode step
  std::chrono::steady_clock::time_point start_;
  bool overlap_encodes_ = true;  // encoder steps on the second queue (more than one in the run)
  VkQueryPool span_pool_ = VK_NULL_HANDLE;
  uint32_t span_queries_ = 0;  // written so far (0: the start not yet)
  double gpu_span_ms_ = 0;
};

}  // namespace recon::gpu
