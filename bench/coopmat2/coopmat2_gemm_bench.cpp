// The NV coopmat2 GEMM (gemm_cm2.comp) timed at given shapes, tiles and accumulator modes, with
// its error against a float64 product of the same fp16 operands on 256 sampled outputs.
// Raw Vulkan rather than gpu::Runtime: the runtime enables neither VK_KHR_cooperative_matrix nor
// VK_NV_cooperative_matrix2, and Debian 12's Vulkan headers do not declare the latter (build.sh
// compiles this against Debian 13's). Ten B matrices are used in turn, as a model's layers each
// have their own weights; dispatches are serialised by barriers; 0.3 s of untimed runs first.
// Usage: coopmat2_gemm_bench SPV MxNxK[,...] WG:BM:BN:BK[,...] MODE[:CHUNK][,...]  (BCOL=1 in
// the environment: B stored N×K)
#include <vulkan/vulkan.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#define CK(x)                                                               \
  do {                                                                      \
    VkResult r_ = (x);                                                      \
    if (r_ != VK_SUCCESS) {                                                 \
      std::fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, r_); \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

static VkDevice dev;
static VkPhysicalDevice phys;
static VkPhysicalDeviceMemoryProperties memprops;

struct Buf {
  VkBuffer b;
  VkDeviceMemory m;
  size_t size;
  void* map = nullptr;
};

static uint32_t mem_type(uint32_t bits, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < memprops.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (memprops.memoryTypes[i].propertyFlags & want) == want) return i;
  std::fprintf(stderr, "no memory type\n");
  std::exit(1);
}

static Buf make_buf(size_t size, bool host) {
  Buf x{};
  x.size = size;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  CK(vkCreateBuffer(dev, &bi, nullptr, &x.b));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, x.b, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex =
      mem_type(req.memoryTypeBits, host ? (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
                                        : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  CK(vkAllocateMemory(dev, &ai, nullptr, &x.m));
  CK(vkBindBufferMemory(dev, x.b, x.m, 0));
  if (host) CK(vkMapMemory(dev, x.m, 0, size, 0, &x.map));
  return x;
}

static std::vector<uint32_t> read_spv(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}

static std::vector<std::vector<uint32_t>> parse(const char* s, char sep) {
  std::vector<std::vector<uint32_t>> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::vector<uint32_t> v;
    std::stringstream is(item);
    std::string f;
    while (std::getline(is, f, sep)) v.push_back(static_cast<uint32_t>(std::stoul(f)));
    out.push_back(v);
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  VkInstance inst;
  CK(vkCreateInstance(&ici, nullptr, &inst));
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(inst, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  vkEnumeratePhysicalDevices(inst, &n, pds.data());
  phys = pds[0];
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(phys, &props);
  std::printf("device %s, driver %u, maxComputeSharedMemorySize %u\n", props.deviceName, props.driverVersion,
              props.limits.maxComputeSharedMemorySize);
  vkGetPhysicalDeviceMemoryProperties(phys, &memprops);

  VkPhysicalDeviceCooperativeMatrix2FeaturesNV cm2f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR cmf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  cmf.pNext = &cm2f;
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  f13.pNext = &cmf;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.pNext = &f13;
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f11;
  vkGetPhysicalDeviceFeatures2(phys, &f2);
  std::printf(
      "coopmat KHR %u; coopmat2: workgroup %u flexible %u reductions %u conversions %u per-element %u tensor %u block "
      "%u\n",
      cmf.cooperativeMatrix, cm2f.cooperativeMatrixWorkgroupScope, cm2f.cooperativeMatrixFlexibleDimensions,
      cm2f.cooperativeMatrixReductions, cm2f.cooperativeMatrixConversions, cm2f.cooperativeMatrixPerElementOperations,
      cm2f.cooperativeMatrixTensorAddressing, cm2f.cooperativeMatrixBlockLoads);
  VkPhysicalDeviceCooperativeMatrix2PropertiesNV cm2p{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &cm2p;
  vkGetPhysicalDeviceProperties2(phys, &p2);
  std::printf("workgroup scope max size %u, flexible max dim %u, reserved shared %u\n",
              cm2p.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize,
              cm2p.cooperativeMatrixFlexibleDimensionsMaxDimension,
              cm2p.cooperativeMatrixWorkgroupScopeReservedSharedMemory);
  auto flex = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV>(
      vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  if (flex) {
    uint32_t c = 0;
    flex(phys, &c, nullptr);
    std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> fp(
        c, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV});
    flex(phys, &c, fp.data());
    for (auto& x : fp)
      std::printf("  flexible: gran %ux%ux%u A %d B %d C %d R %d scope %d invocations %u\n", x.MGranularity,
                  x.NGranularity, x.KGranularity, x.AType, x.BType, x.CType, x.ResultType, x.scope,
                  x.workgroupInvocations);
  }

  float prio = 1;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = 0;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  const char* exts[] = {"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2"};
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &f2;  // everything the device has, enabled
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = 2;
  dci.ppEnabledExtensionNames = exts;
  CK(vkCreateDevice(phys, &dci, nullptr, &dev));
  VkQueue q;
  vkGetDeviceQueue(dev, 0, 0, &q);

  const std::vector<uint32_t> spv = read_spv(argv[1]);
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = spv.size() * 4;
  smi.pCode = spv.data();
  VkShaderModule sm;
  CK(vkCreateShaderModule(dev, &smi, nullptr, &sm));
  VkDescriptorSetLayoutBinding binds[3];
  for (uint32_t i = 0; i < 3; ++i)
    binds[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo dli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dli.bindingCount = 3;
  dli.pBindings = binds;
  VkDescriptorSetLayout dsl;
  CK(vkCreateDescriptorSetLayout(dev, &dli, nullptr, &dsl));
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, 12};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &dsl;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &pcr;
  VkPipelineLayout pl;
  CK(vkCreatePipelineLayout(dev, &pli, nullptr, &pl));
  const int kB = 10;
  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3 * kB};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
  dpi.maxSets = kB;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &ps;
  VkDescriptorPool dp;
  CK(vkCreateDescriptorPool(dev, &dpi, nullptr, &dp));
  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  VkCommandPool cp;
  CK(vkCreateCommandPool(dev, &cpi, nullptr, &cp));
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = cp;
  cai.commandBufferCount = 1;
  VkCommandBuffer cb;
  CK(vkAllocateCommandBuffers(dev, &cai, &cb));
  VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qpi.queryCount = 2;
  VkQueryPool qp;
  CK(vkCreateQueryPool(dev, &qpi, nullptr, &qp));
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  CK(vkCreateFence(dev, &fci, nullptr, &fence));
  auto submit_wait = [&]() {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    CK(vkQueueSubmit(q, 1, &si, fence));
    CK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));
    CK(vkResetFences(dev, 1, &fence));
  };
  auto copy = [&](Buf& src, Buf& dst) {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CK(vkBeginCommandBuffer(cb, &bi));
    VkBufferCopy r{0, 0, src.size};
    vkCmdCopyBuffer(cb, src.b, dst.b, 1, &r);
    CK(vkEndCommandBuffer(cb));
    submit_wait();
  };

  const char* bcol_env = std::getenv("BCOL");
  const uint32_t bcol = bcol_env != nullptr && std::string(bcol_env) == "1" ? 1u : 0u;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  for (const auto& sh : parse(argv[2], 'x')) {
    const uint32_t M = sh[0], N = sh[1], K = sh[2];
    std::vector<_Float16> ha(size_t(M) * K), hb(size_t(K) * N);
    for (auto& v : ha) v = static_cast<_Float16>(uni(rng));
    for (auto& v : hb) v = static_cast<_Float16>(uni(rng));
    Buf sa = make_buf(ha.size() * 2, true), sb = make_buf(hb.size() * 2, true);
    std::memcpy(sa.map, ha.data(), sa.size);
    std::memcpy(sb.map, hb.data(), sb.size);
    Buf a = make_buf(sa.size, false), c = make_buf(size_t(M) * N * 2, false), rc = make_buf(c.size, true);
    copy(sa, a);
    std::vector<Buf> bs;
    for (int i = 0; i < kB; ++i) {
      bs.push_back(make_buf(sb.size, false));
      copy(sb, bs.back());
    }
    std::vector<VkDescriptorSet> sets(kB);
    std::vector<VkDescriptorSetLayout> layouts(kB, dsl);
    VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dai.descriptorPool = dp;
    dai.descriptorSetCount = kB;
    dai.pSetLayouts = layouts.data();
    CK(vkAllocateDescriptorSets(dev, &dai, sets.data()));
    for (int i = 0; i < kB; ++i) {
      VkDescriptorBufferInfo infos[3] = {{a.b, 0, VK_WHOLE_SIZE}, {bs[i].b, 0, VK_WHOLE_SIZE}, {c.b, 0, VK_WHOLE_SIZE}};
      VkWriteDescriptorSet w[3];
      for (uint32_t j = 0; j < 3; ++j) {
        w[j] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        w[j].dstSet = sets[i];
        w[j].dstBinding = j;
        w[j].descriptorCount = 1;
        w[j].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w[j].pBufferInfo = &infos[j];
      }
      vkUpdateDescriptorSets(dev, 3, w, 0, nullptr);
    }
    // Reference rows/cols sampled.
    std::vector<std::pair<uint32_t, uint32_t>> samples;
    for (int i = 0; i < 256; ++i) samples.push_back({rng() % M, rng() % N});
    std::vector<double> ref(samples.size());
    double ref_max = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      double s = 0;
      for (uint32_t k = 0; k < K; ++k)
        s += double(ha[size_t(samples[i].first) * K + k]) *
             double(bcol ? hb[size_t(samples[i].second) * K + k] : hb[size_t(k) * N + samples[i].second]);
      ref[i] = s;
      ref_max = std::max(ref_max, std::abs(s));
    }
    for (const auto& t : parse(argv[3], ':')) {
      for (const auto& md : parse(argv[4], ':')) {
        const uint32_t spec[7] = {t[0], t[1], t[2], t[3], md[0], md.size() > 1 ? md[1] : 4u, bcol};
        VkSpecializationMapEntry entries[7];
        for (uint32_t i = 0; i < 7; ++i) entries[i] = {i, i * 4, 4};
        VkSpecializationInfo si{7, entries, sizeof(spec), spec};
        VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
        cpci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
        cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        cpci.stage.module = sm;
        cpci.stage.pName = "main";
        cpci.stage.pSpecializationInfo = &si;
        cpci.layout = pl;
        VkPipeline pipe;
        VkResult r = vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, nullptr, &pipe);
        if (r != VK_SUCCESS) {
          std::printf("%ux%ux%u tile wg %u %ux%ux%u mode %u/%u: pipeline failed %d\n", M, N, K, t[0], t[1], t[2], t[3],
                      spec[4], spec[5], r);
          continue;
        }
        const uint32_t pc[3] = {M, N, K};
        auto record = [&](int reps, bool stamp) {
          VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
          CK(vkBeginCommandBuffer(cb, &bi));
          if (stamp) vkCmdResetQueryPool(cb, qp, 0, 2);
          vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
          vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 12, pc);
          if (stamp) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
          for (int i = 0; i < reps; ++i) {
            vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &sets[i % kB], 0, nullptr);
            vkCmdDispatch(cb, (M + t[1] - 1) / t[1], (N + t[2] - 1) / t[2], 1);
            VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
            mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
            mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
            vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                 &mb, 0, nullptr, 0, nullptr);
          }
          if (stamp) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
          CK(vkEndCommandBuffer(cb));
        };
        // Warm the clocks ~0.3 s.
        const auto w0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(300)) {
          record(20, false);
          submit_wait();
        }
        const int reps = 30;
        record(reps, true);
        submit_wait();
        uint64_t ts[2];
        CK(vkGetQueryPoolResults(dev, qp, 0, 2, sizeof(ts), ts, 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        const double sec = double(ts[1] - ts[0]) * props.limits.timestampPeriod * 1e-9 / reps;
        copy(c, rc);
        const _Float16* out = static_cast<const _Float16*>(rc.map);
        double err = 0;
        for (size_t i = 0; i < samples.size(); ++i)
          err = std::max(err, std::abs(double(out[size_t(samples[i].first) * N + samples[i].second]) - ref[i]));
        std::printf(
            "%5ux%5ux%5u b%s wg %3u tile %3ux%3ux%2u mode %u chunk %2u: %8.1f us %7.1f TFLOP/s  err %.2e of max %.1f\n",
            M, N, K, bcol ? "col" : "row", t[0], t[1], t[2], t[3], spec[4], spec[5], sec * 1e6,
            2.0 * M * N * K / sec * 1e-12, err / ref_max, ref_max);
        std::fflush(stdout);
        vkDestroyPipeline(dev, pipe, nullptr);
      }
    }
    CK(vkFreeDescriptorSets(dev, dp, kB, sets.data()));
    for (Buf* x : {&sa, &sb, &a, &c, &rc}) {
      vkDestroyBuffer(dev, x->b, nullptr);
      vkFreeMemory(dev, x->m, nullptr);
    }
    for (Buf& x : bs) {
      vkDestroyBuffer(dev, x.b, nullptr);
      vkFreeMemory(dev, x.m, nullptr);
    }
  }
  return 0;
}
