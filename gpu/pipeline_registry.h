// Builds and owns every compute pipeline. All pipelines share one descriptor-set layout
// (kMaxBindings storage buffers) and one push-constant range, so any dispatch can use any
// pipeline with the same binding code. Tile geometry travels as specialisation constants
// (constant_id 0, 1, … in the order given), shapes as push constants.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gpu/context.h"
#include "gpu/pipeline_cache.h"
#include "gpu/status.h"

namespace recon::gpu {

inline constexpr uint32_t kMaxBindings = 8;
inline constexpr uint32_t kMaxPushConstantBytes = 128;

struct Pipeline {
  std::string key;  // "<shader>" or "<shader>[c0,c1,...]"
  VkPipeline pipeline = VK_NULL_HANDLE;
  double create_ms = 0;  // time vkCreateComputePipelines took
  // The compiler's statistics ("Register Count=96, ..."), when caps().pipeline_statistics.
  std::string statistics;
};

class PipelineRegistry {
 public:
  // `cache` may be null (no cache); it must outlive the registry.
  static Result<std::unique_ptr<PipelineRegistry>> create(Context& context, PipelineCache* cache);
  ~PipelineRegistry();
  PipelineRegistry(const PipelineRegistry&) = delete;
  PipelineRegistry& operator=(const PipelineRegistry&) = delete;

  // The pipeline for a shader variant and specialisation constants, created on first use.
  Result<const Pipeline*> get(std::string_view shader, std::span<const uint32_t> spec_constants = {});

  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  VkPipelineLayout layout() const { return layout_; }
  size_t pipeline_count() const;
  double total_create_ms() const;

 private:
  explicit PipelineRegistry(Context& context, PipelineCache* cache) : context_(context), cache_(cache) {}
  Status init();
  std::string executable_statistics(VkPipeline pipeline) const;

  Context& context_;
  PipelineCache* cache_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;

  mutable std::mutex mutex_;  // guards the maps; pipelines are never removed, so pointers stay valid
  std::unordered_map<std::string, VkShaderModule> modules_;
  std::unordered_map<std::string, std::unique_ptr<Pipeline>> pipelines_;
};

}  // namespace recon::gpu
