// Input images: see image_input.h.
#include "daemon/serving/image_input.h"

#include <cstring>
#include <string>

#include "daemon/serving/region_import.h"
#include "gpu/log.h"
#include "gpu/ops/resize_official.h"
#include "tools/io/official_resize.h"

namespace recon::daemon {

const char* input_path_name(InputPath path) {
  switch (path) {
    case InputPath::kZeroCopy:
      return "zero-copy";
    case InputPath::kStaging:
      return "staging";
    case InputPath::kCpu:
      return "cpu";
  }
  return "?";
}

gpu::ImageU8View ModelImage::view() const {
  if (device.defined()) return gpu::ImageU8View{nullptr, size.height, size.width, 0, &device};
  return gpu::ImageU8View{host.data(), size.height, size.width, 0};
}

namespace {

Status check_prepared_size(uint32_t width, uint32_t height, const ImageSize& target) {
  if (width == target.width && height == target.height) return Status::ok();
  return internal_error("official preparation gave " + std::to_string(width) + "x" + std::to_string(height) +
                        ", expected " + target.to_string());
}

// The CPU path: one row-by-row copy out of client memory, then the official resize on the CPU.
Result<std::vector<uint8_t>> prepare_on_cpu(PendingImage& image) {
  const size_t row = size_t{image.size.width} * 3;
  std::vector<uint8_t> packed;
  if (image.lease) {
    packed.resize(row * image.size.height);
    const uint8_t* source = image.lease.bytes().data();
    for (uint32_t y = 0; y < image.size.height; ++y) {
      std::memcpy(packed.data() + y * row, source + size_t{y} * image.stride, row);
    }
    image.lease.reset();
  } else {
    packed = std::move(image.inline_bytes);
  }
  if (!image.resize) return packed;
  io::Image rgb;
  rgb.width = static_cast<int>(image.size.width);
  rgb.height = static_cast<int>(image.size.height);
  rgb.channels = 3;
  rgb.pixels = std::move(packed);
  RECON_ASSIGN_OR_RETURN(io::PreparedImage prepared,
                         io::prepare_official(rgb, static_cast<int>(image.long_side), image.crop));
  RECON_RETURN_IF_ERROR(check_prepared_size(static_cast<uint32_t>(prepared.image.width),
                                            static_cast<uint32_t>(prepared.image.height), image.target));
  return std::move(prepared.image.pixels);
}

// The import of the image's region on this device, if any.
const gpu::HostImport* import_for(const PendingImage& image, const InputPreparation& where) {
  return region_import_on(image.lease, where.device);
}

// The GPU paths. Does not release the lease (the CPU fallback may still need it).
Result<gpu::Tensor> prepare_on_gpu(const PendingImage& image, const InputPreparation& where) {
  gpu::Runtime& rt = *where.runtime;
  gpu::ops::RgbImageSource source;
  source.height = image.size.height;
  source.width = image.size.width;
  source.stride = image.stride;
  if (const gpu::HostImport* import = import_for(image, where)) {
    source.bytes = import->bytes();
    source.offset = static_cast<uint64_t>(image.lease.bytes().data() - image.lease.base());
  } else {
    // The one read of client memory: the image's bytes as they lie, in one upload.
    const std::span<const uint8_t> bytes =
        image.lease ? std::span<const uint8_t>(image.lease.bytes()) : std::span<const uint8_t>(image.inline_bytes);
    RECON_ASSIGN_OR_RETURN(
        source.bytes,
        gpu::Tensor::from_host(rt, gpu::DType::kU8, {static_cast<int64_t>(bytes.size())}, bytes.data(), bytes.size()));
  }
  RECON_ASSIGN_OR_RETURN(std::vector<gpu::Tensor> out,
                         gpu::ops::prepare_official_images(rt, std::span(&source, 1), image.long_side, image.crop));
  const gpu::Shape& shape = out[0].shape();
  RECON_RETURN_IF_ERROR(
      check_prepared_size(static_cast<uint32_t>(shape[1]), static_cast<uint32_t>(shape[0]), image.target));
  return std::move(out[0]);
}

}  // namespace

Result<ModelImage> materialize(PendingImage& image, const InputPreparation& where) {
  ModelImage out;
  out.size = image.target;
  const gpu::HostImport* import = import_for(image, where);
  const bool imported = import != nullptr;
  // A packed image at model size in an imported region needs no preparation at all: the engine
  // copies it from the client's pages on the GPU, while the lease keeps them mapped and imported.
  if (imported && !image.resize && image.stride == image.size.width * 3 && where.gpu_preprocess) {
    const auto first = static_cast<int64_t>(image.lease.bytes().data() - image.lease.base());
    const int64_t bytes = int64_t{image.size.height} * image.size.width * 3;
    auto view = import->bytes().slice_rows(first, first + bytes);
    if (view.is_ok()) view = view->reshape({image.size.height, image.size.width, 3});
    if (view.is_ok()) {
      out.device = std::move(view).value();
      out.lease = std::move(image.lease);
      out.path = InputPath::kZeroCopy;
      return out;
    }
    log_warning("viewing an imported image failed, preparing it instead: " + view.status().to_string());
  }
  // An unimported image already at model size needs no GPU work: the engine uploads it.
  if (where.runtime != nullptr && where.gpu_preprocess && (imported || image.resize)) {
    auto prepared = prepare_on_gpu(image, where);
    if (prepared.is_ok()) {
      out.device = std::move(prepared).value();
      out.path = imported ? InputPath::kZeroCopy : InputPath::kStaging;
      image.lease.reset();
      image.inline_bytes = {};
      return out;
    }
    log_warning("GPU image preparation failed, using the CPU: " + prepared.status().to_string());
  }
  RECON_ASSIGN_OR_RETURN(out.host, prepare_on_cpu(image));
  out.path = InputPath::kCpu;
  return out;
}

Result<std::vector<ModelImage>> materialize_all(std::vector<PendingImage>& images, const InputPreparation& where) {
  std::vector<ModelImage> out;
  out.reserve(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    auto image = materialize(images[i], where);
    if (!image.is_ok()) return image.status().with_context("images[" + std::to_string(i) + "]");
    out.push_back(std::move(image).value());
  }
  return out;
}

}  // namespace recon::daemon
