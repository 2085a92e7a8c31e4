// ModelInput: one named input of the generic Client::infer(model, inputs) — an image or a tensor
// in an ImageBuffer of the same Client, a tensor sent inline, or a Result of the same Client (one
// of its tensors, or the whole result) that the daemon reads where it lies, on the GPU. Which names
// a model reads is its kind's: "mast3r" image1, image2; "retrieval" images (the name repeated, one
// per image); "match" pair (a whole pair Result); "onnx" the graph's inputs, as tensors or result
// tensors. A ModelInput refers to its image, tensor, bytes or Result; they must outlive the
// infer() call that sends it (not its answer).
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

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
  static ModelInput buffer_tensor(std::string name, const BufferTensor& view) {
    ModelInput input;
    input.name = std::move(name);
    input.tensor_view = &view;
    return input;
  }
  // A tensor inside the request (remote clients, small tensors; the daemon bounds its size).
  static ModelInput inline_tensor(std::string name, DType dtype, std::vector<uint64_t> shape,
                                  std::span<const std::byte> data) {
    ModelInput input;
    input.name = std::move(name);
    input.inline_dtype = dtype;
    input.inline_shape = std::move(shape);
    input.inline_data = data;
    input.has_inline = true;
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
  const ImageView* image_view = nullptr;  // exactly one of these four is set
  const BufferTensor* tensor_view = nullptr;
  bool has_inline = false;
  const Result* source = nullptr;
  std::string tensor;  // of `source`
  DType inline_dtype = DType::kF32;
  std::vector<uint64_t> inline_shape;
  std::span<const std::byte> inline_data;
};

}  // namespace recon::client
