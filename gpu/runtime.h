// The GPU runtime bundle a model, tool or test works with: one Context plus its pipeline cache,
// pipeline registry and the three buffer pools (weights, activations, staging).
#pragma once

#include <memory>
#include <string>

#include "gpu/buffer_pool.h"
#include "gpu/context.h"
#include "gpu/pipeline_cache.h"
#include "gpu/pipeline_registry.h"
#include "gpu/status.h"

namespace recon::gpu {

struct RuntimeOptions {
  ContextOptions context;
  // Pipeline cache file; "" for PipelineCache::default_path(), "none" for no file.
  std::string pipeline_cache_path;
  VkDeviceSize weights_cap = 0;      // 0: no cap
  VkDeviceSize activations_cap = 0;  // 0: no cap
  VkDeviceSize staging_cap = 0;      // 0: no cap
  VkDeviceSize block_size = VkDeviceSize{64} << 20;
};

class Runtime {
 public:
  static Result<std::unique_ptr<Runtime>> create(const RuntimeOptions& options = {});
  ~Runtime();

  Context& context() { return *context_; }
  const Capabilities& caps() const { return context_->caps(); }
  PipelineRegistry& pipelines() { return *registry_; }
  PipelineCache& pipeline_cache() { return *cache_; }
  BufferPool& pool(MemoryRole role);

 private:
  Runtime() = default;
  // Destruction order matters: pools and pipelines before the context.
  std::unique_ptr<Context> context_;
  std::unique_ptr<PipelineCache> cache_;
  std::unique_ptr<PipelineRegistry> registry_;
  std::unique_ptr<BufferPool> weights_, activations_, staging_;
};

}  // namespace recon::gpu
