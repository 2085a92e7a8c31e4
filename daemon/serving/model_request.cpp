// ModelRequest: see model_request.h.
#include "daemon/serving/model_request.h"

namespace recon::daemon {
namespace {

// Moves the inputs named `name` out of `request` (keeping the order of the others).
std::vector<ModelInput> take(ModelRequest& request, std::string_view name) {
  std::vector<ModelInput> taken, kept;
  for (ModelInput& input : request.inputs) (input.name == name ? taken : kept).push_back(std::move(input));
  request.inputs = std::move(kept);
  return taken;
}

}  // namespace

std::string model_label(const ModelRequest& request) {
  return "model '" + request.model.name + "' (" + request.model.kind + ")";
}

Result<std::vector<PendingImage>> take_images(ModelRequest& request, std::string_view name, size_t min, size_t max) {
  std::vector<ModelInput> taken = take(request, name);
  if (taken.size() < min || taken.size() > max) {
    const std::string takes = min == max ? (min == 1 ? "one image" : std::to_string(min) + " images")
                                         : std::to_string(min) + " to " + std::to_string(max) + " images";
    return invalid_argument(model_label(request) + " takes " + takes + " named '" + std::string(name) +
                            "'; the request has " + std::to_string(taken.size()));
  }
  std::vector<PendingImage> images;
  images.reserve(taken.size());
  for (ModelInput& input : taken) {
    auto* image = std::get_if<PendingImage>(&input.value);
    if (image == nullptr) {
      return invalid_argument("input '" + std::string(name) + "' of " + model_label(request) +
                              " is an image; the request names a result");
    }
    images.push_back(std::move(*image));
  }
  return images;
}

Result<PendingImage> take_image(ModelRequest& request, std::string_view name) {
  RECON_ASSIGN_OR_RETURN(std::vector<PendingImage> images, take_images(request, name, 1, 1));
  return std::move(images.front());
}

Result<ResultInput> take_result(ModelRequest& request, std::string_view name) {
  std::vector<ModelInput> taken = take(request, name);
  if (taken.size() != 1) {
    return invalid_argument(model_label(request) + " takes one input '" + std::string(name) + "'; the request has " +
                            std::to_string(taken.size()));
  }
  auto* result = std::get_if<ResultInput>(&taken.front().value);
  if (result == nullptr) {
    return invalid_argument("input '" + std::string(name) + "' of " + model_label(request) +
                            " is a result (ResultRef); the request sends an image");
  }
  return std::move(*result);
}

Result<ModelInput> take_input(ModelRequest& request, std::string_view name) {
  std::vector<ModelInput> taken = take(request, name);
  if (taken.size() != 1) {
    return invalid_argument(model_label(request) + " takes one input '" + std::string(name) + "'; the request has " +
                            std::to_string(taken.size()));
  }
  return std::move(taken.front());
}

Status check_no_other_inputs(const ModelRequest& request, std::string_view reads) {
  if (request.inputs.empty()) return Status::ok();
  return invalid_argument(model_label(request) + " has no input '" + request.inputs.front().name + "'; it reads " +
                          std::string(reads));
}

}  // namespace recon::daemon
