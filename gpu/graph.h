// A recorded graph: a fixed sequence of compute dispatches, recorded once into a command buffer
// with the barriers its data dependencies need, and replayed many times. Dispatches are recorded by
// dependency level, not in the order they were added (gpu/graph_schedule.h); timestamp marks are
// fences that no dispatch crosses. External inputs and
// outputs are slots, bound to new tensors before each run.
//
// How rebinding works: Debian 12's lavapipe has no descriptor update-after-bind, so a descriptor
// set cannot change under a recorded command buffer. A graph therefore keeps a small cache of
// recordings keyed by the identity (buffer, offset) of the tensors bound to its slots. Callers
// that cycle through a few pooled buffers (the normal case) replay without re-recording;
// `record_count()` says how often recording happened.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/pipeline_registry.h"
#include "gpu/status.h"
#include "gpu/tensor.h"

namespace recon::gpu {

class Runtime;

// An operand of a dispatch: either a tensor fixed at build time or a slot bound per run.
class Arg {
 public:
  Arg(const Tensor& t) : tensor_(t), dtype_(t.dtype()), shape_(t.shape()) {}  // NOLINT
  static Arg slot(uint32_t index, DType dtype, Shape shape) {
    Arg a;
    a.slot_ = index;
    a.dtype_ = dtype;
    a.shape_ = std::move(shape);
    return a;
  }
  bool is_slot() const { return slot_.has_value(); }
  uint32_t slot_index() const { return *slot_; }
  const Tensor& tensor() const { return tensor_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_numel(shape_); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

 private:
  Arg() = default;
  Tensor tensor_;
  std::optional<uint32_t> slot_;
  DType dtype_ = DType::kF32;
  Shape shape_;
};

enum class Access : uint8_t { kRead, kWrite, kReadWrite };

struct Binding {
  Arg arg;
  Access access;
};

struct Queue;

// How one run is submitted, for callers that chain graphs across queues (MASt3R's pipelined batches).
struct GraphSubmit {
  Queue* queue = nullptr;  // null: the context's compute queue
  // Timeline semaphore values the run waits for on the GPU (all commands wait).
  std::vector<std::pair<VkSemaphore, uint64_t>> waits;
  // Caller-recorded command buffers submitted in the same batch just before and just after the
  // graph (copies in and out); the graph's own edge barriers order them against its dispatches.
  VkCommandBuffer before = VK_NULL_HANDLE, after = VK_NULL_HANDLE;
};

class Graph {
 public:
  explicit Graph(Runtime& rt);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Declares an external operand; every run needs a tensor of this dtype and shape bound to it.
  Arg add_slot(std::string name, DType dtype, Shape shape);
  Status bind(const Arg& slot, const Tensor& tensor);
  Status bind(std::string_view slot_name, const Tensor& tensor);

  // A buffer of the graph's own, shared by every dispatch that binds an Arg returned for `name`
  // (split-K's partial tiles and arrival counters): allocated at the next submission as large as
  // the largest `numel` asked for, zeroed then, and kept. Dispatches that bind it for writing are
  // ordered like any writers of one buffer, so its contents are nobody's between them: each user
  // leaves it as it found it (zeroed counters) or writes before it reads (partials).
  Arg scratch(std::string_view name, DType dtype, int64_t numel);
  // Bytes of scratch the graph holds (or will, from its next submission).
  uint64_t scratch_bytes() const;

  // Appends a dispatch. `bindings[i]` goes to binding i of the shader.
  Status dispatch(std::string_view shader, std::span<const uint32_t> spec_constants,
                  std::initializer_list<Binding> bindings, const void* push, uint32_t push_size,
                  std::array<uint32_t, 3> groups);
  template <typename Push>
  Status dispatch(std::string_view shader, std::span<const uint32_t> spec, std::initializer_list<Binding> bindings,
                  const Push& push, std::array<uint32_t, 3> groups) {
    static_assert(sizeof(Push) <= kMaxPushConstantBytes, "push constants exceed the shared 128-byte range");
    return dispatch(shader, spec, bindings, &push, sizeof(Push), groups);
  }

  // Marks a point between dispatches; after a run, timings() gives the GPU time between marks.
  void timestamp(std::string label);
  // GPU milliseconds from each mark to the next one (the last mark to the end of the graph), of the
  // most recent completed run; empty when the device has no timestamps on the compute queue.
  std::vector<std::pair<std::string, double>> timings();

  // Submits (recording first if these bindings are new) and returns the timeline value to wait for.
  Result<uint64_t> submit();
  Result<uint64_t> submit(const GraphSubmit& how);
  Status wait(uint64_t value);
  // The timeline semaphore runs signal, and the value of the most recent submission (0: none).
  VkSemaphore timeline() const { return timeline_; }
  uint64_t last_submitted() const { return timeline_value_; }
  Status run();  // submit() then wait()

  Runtime& runtime() const { return rt_; }
  size_t dispatch_count() const { return dispatches_.size(); }
  uint64_t record_count() const { return record_count_; }
  size_t barrier_count() const { return last_barrier_count_; }

  // Splits a flat count of workgroups into an x/y grid within the device's per-dimension limit.
  static std::array<uint32_t, 3> grid_1d(uint64_t workgroups);

 private:
  struct Dispatch {
    const Pipeline* pipeline;
    std::vector<Binding> bindings;
    std::array<uint8_t, kMaxPushConstantBytes> push{};
    uint32_t push_size = 0;
    std::array<uint32_t, 3> groups{};
  };
  struct SlotInfo {
    std::string name;
    DType dtype;
    Shape shape;
    Tensor bound;
  };
  struct Recording;
  struct Resolved {
    VkBuffer buffer;
    VkDeviceSize offset, range;
  };

  Result<Resolved> resolve(const Binding& b) const;
  // Allocates (or, once runs are done, enlarges) the scratch buffers and binds them to their slots.
  Status bind_scratch();
  Result<Recording*> recording_for_current_bindings();
  Status record(Recording& rec);
  // The first `count` timestamps of `pool` (empty when unavailable).
  std::vector<uint64_t> read_ticks(VkQueryPool pool, size_t count) const;
  // Adds a completed run's per-dispatch times to the process-wide profile (gpu/dispatch_profile.h).
  void collect_profile(Recording& rec);

  struct Mark {
    size_t before_dispatch;  // index of the dispatch the mark precedes
    std::string label;
  };

  Runtime& rt_;
  std::vector<Mark> marks_;
  VkQueryPool query_pool_ = VK_NULL_HANDLE;
  std::vector<SlotInfo> slots_;
  std::vector<uint32_t> scratch_slots_;  // slots_ that scratch() made
  std::vector<Dispatch> dispatches_;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t timeline_value_ = 0;
  std::list<std::unique_ptr<Recording>> recordings_;  // most recently used first
  uint64_t record_count_ = 0;
  size_t last_barrier_count_ = 0;
};

}  // namespace recon::gpu
