// A VkPipelineCache persisted to disk behind a header we validate ourselves: vendor, device,
// driver version, pipelineCacheUUID, a hash of our embedded SPIR-V, and a checksum of the data.
// A corrupt, truncated or foreign file is ignored with a warning and never handed to the driver.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/context.h"
#include "gpu/status.h"

namespace recon::gpu {

enum class CacheState { kCold, kWarm, kRejected };
const char* cache_state_name(CacheState state);

class PipelineCache {
 public:
  // Loads `path` if it exists and is valid for this device and shader set; otherwise starts cold.
  // An empty path keeps the cache in memory only.
  static Result<std::unique_ptr<PipelineCache>> open(Context& context, std::string path);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  VkPipelineCache handle() const { return cache_; }
  CacheState state() const { return state_; }
  const std::string& path() const { return path_; }
  const std::string& rejection_reason() const { return rejection_reason_; }
  size_t loaded_bytes() const { return loaded_bytes_; }

  // Writes the cache atomically (temporary file + rename). Call right after warm-up.
  Status save();

  // The default location: $RECON_CACHE_DIR, else $CACHE_DIRECTORY (systemd), else
  // $XDG_CACHE_HOME/recon, else ~/.cache/recon; file "pipelines-<vendor>-<device>.bin".
  static std::string default_path(const Capabilities& caps);

  // Validates a file image against this device; returns the Vulkan payload or why it was refused.
  static Result<std::vector<uint8_t>> parse(const std::vector<uint8_t>& file, const Capabilities& caps,
                                            uint64_t shader_hash);
  static std::vector<uint8_t> serialize(const std::vector<uint8_t>& payload, const Capabilities& caps,
                                        uint64_t shader_hash);

 private:
  PipelineCache(Context& context, std::string path) : context_(context), path_(std::move(path)) {}
  Context& context_;
  std::string path_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  CacheState state_ = CacheState::kCold;
  std::string rejection_reason_;
  size_t loaded_bytes_ = 0;
};

}  // namespace recon::gpu
