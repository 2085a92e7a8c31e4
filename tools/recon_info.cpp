// recon-info: prints the Vulkan devices, the one recon would choose, its capability set, memory
// heaps and budget, and the pipeline cache's path and state. Exit code 0 when a device is usable.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "gpu/runtime.h"
#include "gpu/self_check.h"

namespace {

void usage() {
  std::puts(
      "usage: recon-info [--device SELECTOR] [--validation] [--self-check]\n"
      "  SELECTOR is a device index or a name substring (default: $RECON_DEVICE, else the best device)");
}

}  // namespace

int main(int argc, char** argv) {
  recon::gpu::RuntimeOptions options;
  bool self_check = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      options.context.device = argv[++i];
    } else if (a == "--self-check") {
      self_check = true;
    } else if (a == "--validation") {
      options.context.validation = true;
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      usage();
      return 2;
    }
  }

  auto devices = recon::gpu::Context::list_devices();
  if (!devices.is_ok()) {
    std::fprintf(stderr, "recon-info: %s\n", devices.status().to_string().c_str());
    return 1;
  }
  std::printf("Vulkan devices:\n");
  for (const auto& d : devices.value()) {
    std::printf("  [%u] %s (%s, Vulkan %u.%u)\n", d.index, d.name.c_str(), recon::gpu::device_type_name(d.type),
                VK_API_VERSION_MAJOR(d.api_version), VK_API_VERSION_MINOR(d.api_version));
  }

  auto rt = recon::gpu::Runtime::create(options);
  if (!rt.is_ok()) {
    std::fprintf(stderr, "recon-info: %s\n", rt.status().to_string().c_str());
    return 1;
  }
  auto& runtime = *rt.value();
  std::printf("\nChosen device: [%u]\n%s", runtime.context().device_index(), runtime.caps().describe().c_str());
  std::printf("  transfer queue:       %s\n",
              runtime.context().transfer_queue() ? "dedicated" : "none (compute queue)");
  std::printf("  validation:           %s\n", runtime.context().validation_enabled() ? "on" : "off");

  auto& cache = runtime.pipeline_cache();
  std::string path = cache.path().empty() ? "(none)" : cache.path();
  std::error_code ec;
  auto size = cache.path().empty() ? 0 : std::filesystem::file_size(cache.path(), ec);
  std::printf("\nPipeline cache:\n  path:  %s\n  state: %s%s%s\n  size:  %s\n", path.c_str(),
              recon::gpu::cache_state_name(cache.state()), cache.rejection_reason().empty() ? "" : " — ",
              cache.rejection_reason().c_str(), ec ? "(no file)" : (std::to_string(size) + " bytes").c_str());
  if (!self_check) return 0;

  std::printf("\nSelf-check (GPU result against exact CPU math):\n");
  auto items = recon::gpu::run_self_check(runtime);
  if (!items.is_ok()) {
    std::fprintf(stderr, "recon-info: self-check could not run: %s\n", items.status().to_string().c_str());
    return 1;
  }
  bool all = true;
  for (const auto& item : items.value()) {
    std::printf("  %-24s %s  max error %.3g (tolerance %.3g)  %.2f ms\n", item.name.c_str(),
                item.passed ? "PASS" : "FAIL", item.max_error, item.tolerance, item.gpu_ms);
    all = all && item.passed;
  }
  if (runtime.context().validation_error_count() > 0) {
    std::printf("  validation errors: %llu\n",
                static_cast<unsigned long long>(runtime.context().validation_error_count()));
    all = false;
  }
  std::printf("%s\n", all ? "self-check passed" : "self-check FAILED");
  return all ? 0 : 1;
}
