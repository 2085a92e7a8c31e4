#include "gpu/pipeline_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "gpu/hash.h"
#include "gpu/log.h"
#include "gpu/shader_registry.h"
#include "gpu/vk_check.h"

namespace recon::gpu {
namespace {

constexpr char kMagic[8] = {'R', 'E', 'C', 'O', 'N', 'P', 'C', '1'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kMaxCacheBytes = size_t{512} << 20;

#pragma pack(push, 1)
struct FileHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t vendor_id;
  uint32_t device_id;
  uint32_t driver_version;
  uint8_t uuid[VK_UUID_SIZE];
  uint64_t shader_hash;
  uint64_t payload_size;
  uint64_t payload_hash;
};
#pragma pack(pop)
static_assert(sizeof(FileHeader) == 64, "pipeline cache header layout is part of the file format");

// The header Vulkan itself puts at the start of vkGetPipelineCacheData's output.
struct VulkanCacheHeader {
  uint32_t header_size;
  uint32_t header_version;
  uint32_t vendor_id;
  uint32_t device_id;
  uint8_t uuid[VK_UUID_SIZE];
};
static_assert(sizeof(VulkanCacheHeader) == 32);

}  // namespace

const char* cache_state_name(CacheState state) {
  switch (state) {
    case CacheState::kCold:
      return "cold";
    case CacheState::kWarm:
      return "warm";
    case CacheState::kRejected:
      return "rejected (started cold)";
  }
  return "?";
}

std::string PipelineCache::default_path(const Capabilities& caps) {
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* d = std::getenv("RECON_CACHE_DIR")) {
    dir = d;
  } else if (const char* d2 = std::getenv("CACHE_DIRECTORY")) {
    dir = std::string(d2).substr(0, std::string(d2).find(':'));
  } else if (const char* x = std::getenv("XDG_CACHE_HOME")) {
    dir = fs::path(x) / "recon";
  } else if (const char* h = std::getenv("HOME")) {
    dir = fs::path(h) / ".cache" / "recon";
  } else {
    dir = "/tmp/recon-cache";
  }
  std::ostringstream name;
  name << "pipelines-" << std::hex << caps.vendor_id << "-" << caps.device_id << ".bin";
  return (dir / name.str()).string();
}

std::vector<uint8_t> PipelineCache::serialize(const std::vector<uint8_t>& payload, const Capabilities& caps,
                                              uint64_t shader_hash) {
  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.format_version = kFormatVersion;
  h.vendor_id = caps.vendor_id;
  h.device_id = caps.device_id;
  h.driver_version = caps.driver_version;
  std::memcpy(h.uuid, caps.pipeline_cache_uuid, VK_UUID_SIZE);
  h.shader_hash = shader_hash;
  h.payload_size = payload.size();
  h.payload_hash = fnv1a(payload.data(), payload.size());
  std::vector<uint8_t> out(sizeof(h) + payload.size());
  std::memcpy(out.data(), &h, sizeof(h));
  if (!payload.empty()) std::memcpy(out.data() + sizeof(h), payload.data(), payload.size());
  return out;
}

Result<std::vector<uint8_t>> PipelineCache::parse(const std::vector<uint8_t>& file, const Capabilities& caps,
                                                  uint64_t shader_hash) {
  if (file.size() < sizeof(FileHeader)) return data_loss("file shorter than its header");
  FileHeader h;
  std::memcpy(&h, file.data(), sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) return data_loss("not a recon pipeline cache (bad magic)");
  if (h.format_version != kFormatVersion) return invalid_argument("unsupported format version");
  if (h.vendor_id != caps.vendor_id || h.device_id != caps.device_id) {
    return invalid_argument("made for another device");
  }
  if (h.driver_version != caps.driver_version) return invalid_argument("made by another driver version");
  if (std::memcmp(h.uuid, caps.pipeline_cache_uuid, VK_UUID_SIZE) != 0) {
    return invalid_argument("pipelineCacheUUID differs");
  }
  if (h.shader_hash != shader_hash) return invalid_argument("made from other shaders (SPIR-V hash differs)");
  if (h.payload_size != file.size() - sizeof(FileHeader)) return data_loss("payload size does not match the file");
  std::vector<uint8_t> payload(file.begin() + sizeof(FileHeader), file.end());
  if (fnv1a(payload.data(), payload.size()) != h.payload_hash) return data_loss("payload checksum mismatch");
  if (!payload.empty()) {
    VulkanCacheHeader v;
    if (payload.size() < sizeof(v)) return data_loss("Vulkan cache header truncated");
    std::memcpy(&v, payload.data(), sizeof(v));
    if (v.header_version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || v.header_size < sizeof(v) ||
        v.vendor_id != caps.vendor_id || v.device_id != caps.device_id ||
        std::memcmp(v.uuid, caps.pipeline_cache_uuid, VK_UUID_SIZE) != 0) {
      return invalid_argument("Vulkan cache header does not match this device");
    }
  }
  return payload;
}

Result<std::unique_ptr<PipelineCache>> PipelineCache::open(Context& context, std::string path) {
  std::unique_ptr<PipelineCache> cache(new PipelineCache(context, std::move(path)));
  std::vector<uint8_t> payload;
  if (!cache->path_.empty()) {
    std::ifstream in(cache->path_, std::ios::binary);
    if (in) {
      std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (file.size() > kMaxCacheBytes) {
        cache->state_ = CacheState::kRejected;
        cache->rejection_reason_ = "file larger than 512 MiB";
      } else {
        auto parsed = parse(file, context.caps(), shader_set_hash());
        if (parsed.is_ok()) {
          payload = std::move(parsed).value();
          cache->state_ = CacheState::kWarm;
          cache->loaded_bytes_ = file.size();
        } else {
          cache->state_ = CacheState::kRejected;
          cache->rejection_reason_ = parsed.status().message();
        }
      }
      if (cache->state_ == CacheState::kRejected) {
        log_warning("ignoring pipeline cache " + cache->path_ + ": " + cache->rejection_reason_);
      }
    }
  }
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = payload.size();
  info.pInitialData = payload.empty() ? nullptr : payload.data();
  RECON_VK_RETURN_IF_ERROR(vkCreatePipelineCache(context.device(), &info, nullptr, &cache->cache_));
  return cache;
}

Status PipelineCache::save() {
  if (path_.empty()) return Status::ok();
  size_t size = 0;
  RECON_VK_RETURN_IF_ERROR(vkGetPipelineCacheData(context_.device(), cache_, &size, nullptr));
  std::vector<uint8_t> payload(size);
  RECON_VK_RETURN_IF_ERROR(vkGetPipelineCacheData(context_.device(), cache_, &size, payload.data()));
  payload.resize(size);
  std::vector<uint8_t> file = serialize(payload, context_.caps(), shader_set_hash());

  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(path_).parent_path(), ec);
  // Unique per process and per cache: the GPUs of one daemon may share a file (same model of GPU)
  // and save it at once from their workers; the last rename wins, each file whole.
  static std::atomic<uint64_t> saves{0};
  std::string tmp = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(saves.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return unavailable("cannot write pipeline cache " + tmp);
    out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
    if (!out) return unavailable("short write to pipeline cache " + tmp);
  }
  fs::rename(tmp, path_, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return unavailable("cannot rename pipeline cache into " + path_);
  }
  return Status::ok();
}

PipelineCache::~PipelineCache() {
  if (cache_ != VK_NULL_HANDLE) vkDestroyPipelineCache(context_.device(), cache_, nullptr);
}

}  // namespace recon::gpu
