// ModelInput: one named input of the generic Client::infer(model, inputs) — an image from an
// ImageBuffer of the same Client, or a Result of the same Client (one of its tensors, or the whole
// result) that the daemon reads where it lies, on the GPU. Which names a model reads is its
// kind's: "mast3r" image1, image2; "retrieval" images (the name repeated, one per image); "match"
// pair (a whole pair Result). A ModelInput refers to its image or Result; both must outlive the
// infer() call that sends it (not its answer).
#pragma once

#include <string>
#include <utility>

#include "recon/client/export.h"
#include "recon/client/image_buffer.h"

namespace recon::client {

class Result;

struct RECON_CLIENT_API ModelInput {
  static ModelInput image(std::string name, const ImageView& view) {
    ModelInput input;
    input.name = std::move(name);
    input.image_view = &view;
    return input;
  }
  // `tensor` empty: the whole result.
  static ModelInput result(std::string name, const Result& result, std::string tensor = {}) {
    ModelInput input;
    input.name = std::move(name);
    input.source = &result;
    input.tensor = std::move(tensor);
    return input;
  }

  std::string name;
  const ImageView* image_view = nullptr;  // exactly one of these two is set
  const Result* source = nullptr;
  std::string tensor;
};

}  // namespace recon::client
