#include "gpu/models/mast3r/mast3r_engine.h"

#include <chrono>
#include <cstring>
#include <tuple>

#include "gpu/transfer.h"

namespace recon::gpu {

bool Mast3rEngine::ShapeLess::operator()(const ForwardShape& a, const ForwardShape& b) const {
  return std::tie(a.batch, a.view1.height, a.view1.width, a.view2.height, a.view2.width) <
         std::tie(b.batch, b.view1.height, b.view1.width, b.view2.height, b.view2.width);
}

Result<std::unique_ptr<Mast3rEngine>> Mast3rEngine::load(Runtime& rt, const std::string& path, Precision precision) {
  std::unique_ptr<Mast3rEngine> e(new Mast3rEngine(rt));
  RECON_ASSIGN_OR_RETURN(e->weights_, Mast3rWeights::load(rt, path, precision));
  return e;
}

Result<Mast3rForward*> Mast3rEngine::forward_for(const ForwardShape& shape) {
  auto it = forwards_.find(shape);
  if (it != forwards_.end()) return it->second.get();
  RECON_ASSIGN_OR_RETURN(auto f, Mast3rForward::build(rt_, *weights_, shape));
  Mast3rForward* raw = f.get();
  forwards_.emplace(shape, std::move(f));
  return raw;
}

std::vector<ForwardShape> Mast3rEngine::warm_shapes() const {
  std::lock_guard lock(mutex_);
  std::vector<ForwardShape> out;
  for (const auto& [s, _] : forwards_) out.push_back(s);
  return out;
}

const Tensor* Mast3rEngine::tap(const ForwardShape& shape, const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = forwards_.find(shape);
  return it == forwards_.end() ? nullptr : it->second->tap(name);
}

Status Mast3rEngine::warmup(const ForwardShape& shape) {
  std::lock_guard lock(mutex_);
  RECON_ASSIGN_OR_RETURN(Mast3rForward * f, forward_for(shape));
  // Mid-grey images: any content works, this only builds pipelines and records the graph.
  std::array<std::vector<uint8_t>, 2> pixels;
  std::array<std::vector<ImageU8View>, 2> views;
  const ViewSize sizes[2] = {shape.view1, shape.view2};
  for (int v = 0; v < 2; ++v) {
    pixels[v].assign(static_cast<size_t>(sizes[v].height * sizes[v].width * 3), 128);
    views[v].assign(shape.batch, ImageU8View{pixels[v].data(), sizes[v].height, sizes[v].width, 0});
  }
  auto r = run_locked(*f, views[0], views[1]);
  return r.status();
}

Result<Mast3rResult> Mast3rEngine::infer(std::span<const ImageU8View> view1, std::span<const ImageU8View> view2) {
  if (view1.empty() || view1.size() != view2.size()) {
    return invalid_argument("infer needs the same non-zero number of view-1 and view-2 images");
  }
  for (auto views : {view1, view2}) {
    for (const ImageU8View& img : views) {
      if (img.data == nullptr) return invalid_argument("image without data");
      if (img.height != views[0].height || img.width != views[0].width) {
        return invalid_argument("images of one view must share a size in a batch");
      }
      if (img.stride != 0 && img.stride < static_cast<size_t>(img.width) * 3) {
        return invalid_argument("image stride smaller than width × 3");
      }
    }
  }
  ForwardShape shape{
      static_cast<int64_t>(view1.size()), {view1[0].height, view1[0].width}, {view2[0].height, view2[0].width}};
  std::lock_guard lock(mutex_);
  RECON_ASSIGN_OR_RETURN(Mast3rForward * f, forward_for(shape));
  return run_locked(*f, view1, view2);
}

std::vector<ImagePair> consecutive_pairs(size_t image_count) {
  std::vector<ImagePair> pairs;
  for (size_t i = 1; i < image_count; ++i) pairs.push_back({static_cast<int32_t>(i - 1), static_cast<int32_t>(i)});
  return pairs;
}

Result<std::vector<Mast3rResult>> Mast3rEngine::infer_batch(std::span<const ImageU8View> images,
                                                            std::span<const ImagePair> pairs) {
  for (const ImagePair& p : pairs) {
    const auto n = static_cast<int32_t>(images.size());
    if (p.first < 0 || p.first >= n || p.second < 0 || p.second >= n) {
      return invalid_argument("pair (" + std::to_string(p.first) + ", " + std::to_string(p.second) +
                              ") names an image outside the batch of " + std::to_string(n));
    }
  }
  // Straightforward first version: one forward per pair (each image is encoded once per pair).
  std::vector<Mast3rResult> results;
  results.reserve(pairs.size());
  for (const ImagePair& p : pairs) {
    RECON_ASSIGN_OR_RETURN(auto r, infer(std::span(&images[p.first], 1), std::span(&images[p.second], 1)));
    results.push_back(std::move(r));
  }
  return results;
}

Result<Mast3rResult> Mast3rEngine::run_locked(Mast3rForward& f, std::span<const ImageU8View> view1,
                                              std::span<const ImageU8View> view2) {
  const auto start = std::chrono::steady_clock::now();
  // Pack each view's images contiguously ([B, H, W, 3]) and upload.
  std::span<const ImageU8View> views[2] = {view1, view2};
  std::vector<uint8_t> packed;
  for (int v = 0; v < 2; ++v) {
    const Tensor& dst = f.input_u8(v);
    packed.resize(dst.bytes());
    size_t offset = 0;
    for (const ImageU8View& img : views[v]) {
      const size_t row = static_cast<size_t>(img.width) * 3, stride = img.stride ? img.stride : row;
      for (int64_t y = 0; y < img.height; ++y, offset += row) std::memcpy(&packed[offset], img.data + y * stride, row);
    }
    RECON_RETURN_IF_ERROR(
        dst.upload(rt_, packed.data(), packed.size()).with_context("uploading view " + std::to_string(v + 1)));
  }
  RECON_RETURN_IF_ERROR(f.graph().run());

  // Copy the outputs into tensors of the result's own, so later calls do not overwrite them.
  Mast3rResult result;
  result.shape = f.shape();
  const auto sources = f.outputs().list();
  const auto targets = result.tensors.list();
  for (size_t i = 0; i < sources.size(); ++i) {
    RECON_ASSIGN_OR_RETURN(*targets[i], Tensor::empty(rt_, sources[i]->dtype(), sources[i]->shape()));
  }
  RECON_RETURN_IF_ERROR(rt_.context().run_once([&](VkCommandBuffer cmd) {
    full_barrier(cmd);
    for (size_t i = 0; i < sources.size(); ++i) {
      VkBufferCopy region{sources[i]->offset(), targets[i]->offset(), sources[i]->bytes()};
      vkCmdCopyBuffer(cmd, sources[i]->buffer(), targets[i]->buffer(), 1, &region);
    }
    full_barrier(cmd);
  }));
  result.stage_ms = f.graph().timings();
  for (const auto& [_, ms] : result.stage_ms) result.gpu_ms += ms;
  result.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace recon::gpu
