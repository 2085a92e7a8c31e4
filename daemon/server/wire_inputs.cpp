// Inputs of a wire request: see wire_inputs.h.
#include "daemon/server/wire_inputs.h"

#include <string>

#include "daemon/ipc/wire_convert.h"

namespace recon::daemon {
namespace {

Status check_side(uint32_t side, const char* which, const char* what) {
  if (side == 0 || side > kMaxImageSide) {
    return invalid_argument(std::string(which) + " " + what + " " + std::to_string(side) + " is outside 1.." +
                            std::to_string(kMaxImageSide));
  }
  return Status::ok();
}

Status decide_target(PendingImage& out, const char* which, const ImageRules& rules) {
  out.long_side = rules.long_side;
  out.crop = rules.crop;
  if (is_official_size(out.size, rules.long_side, rules.crop)) {
    out.target = out.size;
    out.resize = false;
  } else {
    RECON_ASSIGN_OR_RETURN(out.target, official_output_size(out.size, rules.long_side, rules.crop));
    out.resize = true;
  }
  if (rules.required && !(out.target == *rules.required)) {
    return invalid_argument(std::string(which) + " (" + out.size.to_string() + ") becomes " + out.target.to_string() +
                            " at " + std::to_string(rules.long_side) + " px, not the requested " +
                            rules.required->to_string() + " (crop or pad it to that aspect first)");
  }
  return Status::ok();
}

constexpr size_t kMaxRank = 8;

Result<TensorElement> element_from_wire(wire::DType dtype, const std::string& which) {
  switch (dtype) {
    case wire::DType::F32:
      return TensorElement::kF32;
    case wire::DType::F16:
      return TensorElement::kF16;
    case wire::DType::U8:
      return TensorElement::kU8;
    case wire::DType::I32:
      return TensorElement::kI32;
    case wire::DType::I64:
      return TensorElement::kI64;
    default:
      return invalid_argument(which + ": element type " + std::string(wire::EnumNameDType(dtype)) +
                              " is not taken (F32, F16, U8, I32, I64)");
  }
}

}  // namespace

Result<PendingImage> accept_image(const wire::Image* image, const char* which, ClientId client, ShmRegistry& registry,
                                  const ImageRules& rules) {
  if (image == nullptr || image->source_type() == wire::ImageSource::NONE) {
    return invalid_argument(std::string(which) + " is missing");
  }
  PendingImage out;
  if (const wire::ImageRef* ref = image->source_as_ImageRef()) {
    RECON_RETURN_IF_ERROR(check_side(ref->height(), which, "height"));
    RECON_RETURN_IF_ERROR(check_side(ref->width(), which, "width"));
    auto geometry = image_geometry_from_wire(*ref);
    if (!geometry.is_ok()) return geometry.status().with_context(which);
    auto lease = registry.lease_image(client, from_wire(ref->region_id()), *geometry);
    if (!lease.is_ok()) return lease.status().with_context(which);
    out.lease = std::move(lease).value();
    out.size = {ref->height(), ref->width()};
    out.stride = ref->stride();
  } else if (const wire::InlineImage* in = image->source_as_InlineImage()) {
    if (in->format() != wire::PixelFormat::RGB8) return invalid_argument(std::string(which) + ": unknown pixel format");
    RECON_RETURN_IF_ERROR(check_side(in->height(), which, "height"));
    RECON_RETURN_IF_ERROR(check_side(in->width(), which, "width"));
    const uint64_t bytes = uint64_t{in->height()} * in->width() * 3;
    if (bytes > rules.max_inline_bytes) {
      return invalid_argument(std::string(which) + ": inline image of " + std::to_string(bytes) +
                              " bytes is over the limit; use a shared-memory region");
    }
    const uint64_t got = in->data() ? in->data()->size() : 0;
    if (got != bytes) {
      return invalid_argument(std::string(which) + ": inline data has " + std::to_string(got) + " bytes, " +
                              std::to_string(in->height()) + "x" + std::to_string(in->width()) + " RGB8 needs " +
                              std::to_string(bytes));
    }
    out.inline_bytes.assign(in->data()->begin(), in->data()->end());
    out.size = {in->height(), in->width()};
    out.stride = in->width() * 3;
  } else {
    return unimplemented(std::string(which) + ": unknown image source");
  }
  RECON_RETURN_IF_ERROR(decide_target(out, which, rules));
  return out;
}

Result<PendingTensor> accept_tensor(const wire::TensorInput* tensor, const std::string& which, ClientId client,
                                    ShmRegistry& registry, const TensorRules& rules) {
  if (tensor == nullptr || tensor->shape() == nullptr) return invalid_argument(which + " has no shape");
  PendingTensor out;
  RECON_ASSIGN_OR_RETURN(out.dtype, element_from_wire(tensor->dtype(), which));
  if (tensor->shape()->size() > kMaxRank) {
    return invalid_argument(which + " has rank " + std::to_string(tensor->shape()->size()) + "; at most 8");
  }
  uint64_t bytes = tensor_element_size(out.dtype);
  for (uint64_t d : *tensor->shape()) {
    if (d == 0 || d > rules.max_bytes || bytes > rules.max_bytes / d) {
      return invalid_argument(which + ": a dimension of " + std::to_string(d) +
                              " (every dimension is ≥ 1, and the tensor at most " + std::to_string(rules.max_bytes) +
                              " bytes)");
    }
    bytes *= d;
    out.shape.push_back(static_cast<int64_t>(d));
  }
  if (tensor->region_id() != nullptr) {
    auto lease = registry.lease_range(client, from_wire(tensor->region_id()), tensor->offset(), bytes);
    if (!lease.is_ok()) return lease.status().with_context(which);
    out.lease = std::move(lease).value();
    return out;
  }
  if (bytes > rules.max_inline_bytes) {
    return invalid_argument(which + ": an inline tensor of " + std::to_string(bytes) +
                            " bytes is over the limit; use a shared-memory region");
  }
  const uint64_t got = tensor->data() != nullptr ? tensor->data()->size() : 0;
  if (got != bytes) {
    return invalid_argument(which + ": inline data has " + std::to_string(got) + " bytes, the shape needs " +
                            std::to_string(bytes));
  }
  out.inline_bytes.assign(tensor->data()->begin(), tensor->data()->end());
  return out;
}

}  // namespace recon::daemon
