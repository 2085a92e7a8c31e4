#include "gpu/models/mast3r/image_packing.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace recon::gpu {
namespace {

void pack(const ImagePackJob& job) {
  const size_t row = static_cast<size_t>(job.width) * 3;
  if (job.stride == row) {
    std::memcpy(job.to, job.from, row * static_cast<size_t>(job.height));
    return;
  }
  for (int64_t y = 0; y < job.height; ++y) std::memcpy(job.to + y * row, job.from + y * job.stride, row);
}

}  // namespace

void pack_images(std::span<const ImagePackJob> jobs) {
  constexpr size_t kMinBytesPerThread = size_t{1} << 20, kMaxThreads = 8;
  size_t bytes = 0;
  for (const ImagePackJob& j : jobs) bytes += static_cast<size_t>(j.height * j.width * 3);
  const size_t threads = std::min({jobs.size(), std::max<size_t>(std::thread::hardware_concurrency(), 1), kMaxThreads,
                                   std::max<size_t>(bytes / kMinBytesPerThread, 1)});
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) pack(jobs[i]);
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
}

}  // namespace recon::gpu
