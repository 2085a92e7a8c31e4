// The Vulkan context: instance (with validation when asked), the chosen physical device, its
// capability set, the logical device, a compute queue (and a second and a third one where the family
// has them) and (where one exists) a transfer queue.
// Everything GPU-side in recon hangs off one Context. It must not know about models or IPC.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/capabilities.h"
#include "gpu/one_shot.h"
#include "gpu/status.h"

namespace recon::gpu {

struct ContextOptions {
  // Device by index ("0") or case-insensitive name substring ("llvmpipe", "H100"). Empty: the
  // RECON_DEVICE environment variable, else the best device (discrete > integrated > virtual > CPU).
  std::string device;
  // Enable the Khronos validation layer with synchronization validation. Also turned on by
  // RECON_VALIDATION=1. If the layer is not installed, a warning is logged and it is skipped.
  bool validation = false;
  std::string application_name = "recon";
};

// Brief description of one physical device, for listing and selection.
struct DeviceInfo {
  uint32_t index = 0;
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0;
};

// A queue plus the mutex that serialises submissions to it (Vulkan requires external sync).
struct Queue {
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  std::mutex mutex;
};

class Context {
 public:
  static Result<std::unique_ptr<Context>> create(const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Lists devices without creating a logical device.
  static Result<std::vector<DeviceInfo>> list_devices();
  // The selector in effect: `configured`, or the RECON_DEVICE environment variable when it is empty.
  static std::string device_selector(const std::string& configured);
  // Resolves a selector ("" = best, an index, or a name substring) against a device list.
  static Result<uint32_t> select_device(const std::vector<DeviceInfo>& devices, const std::string& selector);
  // Several devices: "all" (every discrete GPU, else the best device), a comma-separated list of
  // selectors (each as select_device; a device named twice is an error), or one selector.
  static Result<std::vector<uint32_t>> select_devices(const std::vector<DeviceInfo>& devices,
                                                      const std::string& selector);

  VkInstance instance() const { return instance_; }
  VkPhysicalDevice physical_device() const { return physical_device_; }
  VkDevice device() const { return device_; }
  const Capabilities& caps() const { return caps_; }
  uint32_t device_index() const { return device_index_; }

  Queue& compute_queue() { return *compute_queue_; }
  // A second queue of the compute family, for work that should overlap the first queue's (the
  // encoder of the next images while the decoder runs); the compute queue itself when the family
  // has only one queue (lavapipe), which is still correct, only serial.
  Queue& second_compute_queue() { return second_compute_queue_ ? *second_compute_queue_ : *compute_queue_; }
  bool has_second_compute_queue() const { return second_compute_queue_ != nullptr; }
  // A third queue of the compute family, for copies that must not wait behind compute (results
  // copied out while the next batch runs). Of the compute family, so that buffers need no queue
  // family ownership transfer; the second queue, then the first, where the family has fewer.
  Queue& copy_queue() { return copy_queue_ ? *copy_queue_ : second_compute_queue(); }
  // The dedicated transfer queue, or nullptr when the device has only one family.
  Queue* transfer_queue() { return transfer_queue_.get(); }

  // Records what Runtime::create probed (gpu/coopmat_layout.h) in caps().
  void set_coopmat_acc_layout(const CoopMatAccLayout& layout) { caps_.coopmat_acc_layout = layout; }

  // Refreshes heap budget/usage (VK_EXT_memory_budget) in caps().
  void refresh_memory_budget();

  // Index of a memory type with `required` flags (and ideally `preferred`), or an error.
  Result<uint32_t> find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                    VkMemoryPropertyFlags preferred) const;

  // True once the driver reports the device lost (VK_ERROR_DEVICE_LOST): a fence status query,
  // no wait, cheap enough to ask after every unit of work.
  bool device_lost() const;

  // Records `record` into a one-shot command buffer, submits it to the compute queue and waits.
  // For uploads, downloads and tests; model graphs use recorded, replayed command buffers.
  Status run_once(const std::function<void(VkCommandBuffer)>& record);

  bool validation_enabled() const { return validation_enabled_; }
  // Number of validation errors reported so far (tests assert it stays 0).
  uint64_t validation_error_count() const { return validation_errors_.load(); }
  const std::string& last_validation_error() const { return last_validation_error_; }

 private:
  Context() = default;
  Status init(const ContextOptions& options);
  Status create_instance(const ContextOptions& options);
  Status create_device();
  void read_capabilities();

  static VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                       VkDebugUtilsMessageTypeFlagsEXT types,
                                                       const VkDebugUtilsMessengerCallbackDataEXT* data, void* user);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  uint32_t device_index_ = 0;
  Capabilities caps_;
  VkPhysicalDeviceMemoryProperties memory_properties_ = {};
  std::unique_ptr<Queue> compute_queue_;
  std::unique_ptr<Queue> second_compute_queue_;  // null when the compute family has one queue
  std::unique_ptr<Queue> copy_queue_;            // null when it has fewer than three
  std::unique_ptr<Queue> transfer_queue_;
  std::vector<const char*> enabled_device_extensions_;

  std::unique_ptr<OneShot> once_;        // run_once's, on the compute queue
  VkFence lost_probe_ = VK_NULL_HANDLE;  // never submitted: its status is NOT_READY or DEVICE_LOST

  bool validation_enabled_ = false;
  std::atomic<uint64_t> validation_errors_{0};
  std::string last_validation_error_;
};

}  // namespace recon::gpu
