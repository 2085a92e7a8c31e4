#include "gpu/pipeline_registry.h"

#include <chrono>
#include <vector>

#include "gpu/log.h"
#include "gpu/shader_registry.h"
#include "gpu/vk_check.h"

namespace recon::gpu {

std::string PipelineRegistry::executable_statistics(VkPipeline pipeline) const {
  VkDevice dev = context_.device();
  auto get_stats = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(dev, "vkGetPipelineExecutableStatisticsKHR"));
  if (get_stats == nullptr) return "unavailable";
  VkPipelineExecutableInfoKHR exe{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
  exe.pipeline = pipeline;
  exe.executableIndex = 0;  // a compute pipeline has one executable
  uint32_t count = 0;
  if (get_stats(dev, &exe, &count, nullptr) != VK_SUCCESS) return "unavailable";
  std::vector<VkPipelineExecutableStatisticKHR> stats(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
  if (get_stats(dev, &exe, &count, stats.data()) != VK_SUCCESS) return "unavailable";
  std::string out;
  for (const auto& st : stats) {
    out += (out.empty() ? "" : ", ") + std::string(st.name) + "=";
    switch (st.format) {
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        out += st.value.b32 ? "true" : "false";
        break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        out += std::to_string(st.value.i64);
        break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        out += std::to_string(st.value.u64);
        break;
      default:
        out += std::to_string(st.value.f64);
    }
  }
  return out;
}

Result<std::unique_ptr<PipelineRegistry>> PipelineRegistry::create(Context& context, PipelineCache* cache) {
  std::unique_ptr<PipelineRegistry> r(new PipelineRegistry(context, cache));
  RECON_RETURN_IF_ERROR(r->init());
  return r;
}

Status PipelineRegistry::init() {
  VkDescriptorSetLayoutBinding bindings[kMaxBindings];
  for (uint32_t i = 0; i < kMaxBindings; ++i) {
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = kMaxBindings;
  set_info.pBindings = bindings;
  RECON_VK_RETURN_IF_ERROR(vkCreateDescriptorSetLayout(context_.device(), &set_info, nullptr, &set_layout_));

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kMaxPushConstantBytes};
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &set_layout_;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &push;
  RECON_VK_RETURN_IF_ERROR(vkCreatePipelineLayout(context_.device(), &layout_info, nullptr, &layout_));
  return Status::ok();
}

Result<const Pipeline*> PipelineRegistry::get(std::string_view shader, std::span<const uint32_t> spec) {
  std::string key(shader);
  if (!spec.empty()) {
    key += "[";
    for (size_t i = 0; i < spec.size(); ++i) key += (i ? "," : "") + std::to_string(spec[i]);
    key += "]";
  }
  std::lock_guard lock(mutex_);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second.get();

  const ShaderBlob* blob = find_shader(shader);
  if (blob == nullptr) return not_found("no shader variant named " + std::string(shader));
  VkShaderModule module = VK_NULL_HANDLE;
  if (auto it = modules_.find(blob->name); it != modules_.end()) {
    module = it->second;
  } else {
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = blob->word_count * sizeof(uint32_t);
    info.pCode = blob->words;
    RECON_VK_RETURN_IF_ERROR(vkCreateShaderModule(context_.device(), &info, nullptr, &module));
    modules_.emplace(blob->name, module);
  }

  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, i * 4u, 4};
  VkSpecializationInfo spec_info{static_cast<uint32_t>(entries.size()), entries.data(), spec.size() * 4, spec.data()};

  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = spec.empty() ? nullptr : &spec_info;
  info.layout = layout_;
  if (context_.caps().pipeline_statistics) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;

  auto pipeline = std::make_unique<Pipeline>();
  pipeline->key = key;
  auto start = std::chrono::steady_clock::now();
  Status s = RECON_VK(vkCreateComputePipelines(context_.device(), cache_ ? cache_->handle() : VK_NULL_HANDLE, 1, &info,
                                               nullptr, &pipeline->pipeline));
  if (!s.is_ok()) return s.with_context("creating pipeline " + key);
  pipeline->create_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (context_.caps().pipeline_statistics) {
    pipeline->statistics = executable_statistics(pipeline->pipeline);
    log_info("pipeline " + key + ": " + pipeline->statistics);
  }
  const Pipeline* out = pipeline.get();
  pipelines_.emplace(key, std::move(pipeline));
  return out;
}

size_t PipelineRegistry::pipeline_count() const {
  std::lock_guard lock(mutex_);
  return pipelines_.size();
}

double PipelineRegistry::total_create_ms() const {
  std::lock_guard lock(mutex_);
  double total = 0;
  for (const auto& [_, p] : pipelines_) total += p->create_ms;
  return total;
}

PipelineRegistry::~PipelineRegistry() {
  VkDevice dev = context_.device();
  for (auto& [_, p] : pipelines_) vkDestroyPipeline(dev, p->pipeline, nullptr);
  for (auto& [_, m] : modules_) vkDestroyShaderModule(dev, m, nullptr);
  if (layout_) vkDestroyPipelineLayout(dev, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(dev, set_layout_, nullptr);
}

}  // namespace recon::gpu
