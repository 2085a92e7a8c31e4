#include "gpu/runtime.h"

#include "gpu/coopmat_layout.h"
#include "gpu/log.h"
#include "gpu/ops/layout.h"

namespace recon::gpu {

Result<std::unique_ptr<Runtime>> Runtime::create(const RuntimeOptions& options) {
  std::unique_ptr<Runtime> rt(new Runtime());
  RECON_ASSIGN_OR_RETURN(rt->context_, Context::create(options.context));
  ops::note_device_binding_limit(rt->context_->caps().max_storage_buffer_range);  // where the ops split
  std::string cache_path = options.pipeline_cache_path;
  if (cache_path.empty()) cache_path = PipelineCache::default_path(rt->context_->caps());
  if (cache_path == "none") cache_path.clear();
  RECON_ASSIGN_OR_RETURN(rt->cache_, PipelineCache::open(*rt->context_, cache_path));
  RECON_ASSIGN_OR_RETURN(rt->registry_, PipelineRegistry::create(*rt->context_, rt->cache_.get()));

  PoolOptions po;
  po.block_size = options.block_size;
  po.role = MemoryRole::kWeights;
  po.cap = options.weights_cap;
  po.exact_large = true;
  RECON_ASSIGN_OR_RETURN(rt->weights_, BufferPool::create(*rt->context_, po));
  po.role = MemoryRole::kActivations;
  po.cap = options.activations_cap;
  po.exact_large = false;
  RECON_ASSIGN_OR_RETURN(rt->activations_, BufferPool::create(*rt->context_, po));
  po.role = MemoryRole::kStaging;
  po.cap = options.staging_cap;
  RECON_ASSIGN_OR_RETURN(rt->staging_, BufferPool::create(*rt->context_, po));

  if (rt->caps().nv_cooperative_matrix) {
    // A failed probe only costs the kernels that would rely on the layout.
    Result<CoopMatAccLayout> layout = probe_coopmat_acc_layout(*rt);
    if (layout.is_ok()) {
      rt->context_->set_coopmat_acc_layout(*layout);
    } else {
      log_warning("cooperative-matrix layout probe failed: " + layout.status().to_string());
    }
  }
  return rt;
}

BufferPool& Runtime::pool(MemoryRole role) {
  switch (role) {
    case MemoryRole::kWeights:
      return *weights_;
    case MemoryRole::kStaging:
      return *staging_;
    case MemoryRole::kActivations:
      break;
  }
  return *activations_;
}

Runtime::~Runtime() {
  if (context_) vkDeviceWaitIdle(context_->device());
  staging_.reset();
  activations_.reset();
  weights_.reset();
  registry_.reset();
  cache_.reset();
  context_.reset();
}

}  // namespace recon::gpu
