// MASt3R's parameters on the device: read from a safetensors file with official names, checked
// against the catalog of the file's configuration (one error naming every missing, unexpected or
// wrong-shaped tensor), converted to the device dtype and uploaded to the weights pool. For a DUNE
// encoder, layer scale is folded into the layers it scales, and the class/register tokens and the
// position table stay on the host (host()), where the encoder's graph builder resamples the table.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpu/ops/conv2d.h"
#include "gpu/ops/linear.h"
#include "gpu/precision.h"
#include "gpu/runtime.h"
#include "gpu/status.h"
#include "gpu/tensor.h"
#include "gpu/weights/mast3r_config.h"

namespace recon::gpu {

// A linear layer's weight as uploaded, with the layout and GEMM path to pass to ops::linear.
struct LinearWeight {
  const Tensor& tensor;
  ops::WeightLayout layout;
  ops::GemmPath path;
};

// A convolution's weight as uploaded, with the layout and GEMM path to pass to ops::conv2d.
struct ConvWeight {
  const Tensor& tensor;
  ops::ConvWeightLayout layout;
  ops::GemmPath path;
};

class Mast3rWeights {
 public:
  // In kF16, the encoder and decoder are stored in fp16; the heads stay fp32, as the official
  // inference runs them (autocast disabled, spec §4.5).
  static Result<std::unique_ptr<Mast3rWeights>> load(Runtime& rt, const std::string& path, Precision precision);

  const Mast3rConfig& config() const { return config_; }
  Precision precision() const { return precision_; }
  DType trunk_dtype() const { return is_fp32(precision_) ? DType::kF32 : DType::kF16; }
  DType head_dtype() const { return precision_ == Precision::kF16Heads ? DType::kF16 : DType::kF32; }
  // The tensor of a catalog name (canonical spelling). Asking for a name that is not loaded is a
  // programming error and aborts. Linear and convolution weights may be stored in another layout:
  // read them with linear() and conv().
  const Tensor& at(std::string_view name) const;
  // A linear layer's weight (a rank-2 "….weight"). Linear weights the tensor-core GEMM runs are
  // uploaded transposed, [in, out], the layout that path reads fastest.
  LinearWeight linear(std::string_view name) const;
  // A convolution's weight (a rank-4 "….weight" of an nn.Conv2d). Weights the tensor-core path
  // runs tap by tap (ops::conv2d_preferred_layout) are uploaded [Cout, KH, KW, Cin].
  ConvWeight conv(std::string_view name) const;
  // The GEMM path of a weight's layer: for fp32 weights kAutoSplitF32 in kF32 and
  // kAutoSplitF32Coarse (the heads of kF16), else kAuto.
  ops::GemmPath gemm_path(std::string_view name) const;
  // A tensor kept on the host in fp32 (the DUNE tokens and position table), row-major. Asking for
  // one that is not kept aborts, as at() does.
  const std::vector<float>& host(std::string_view name) const;
  size_t device_bytes() const { return device_bytes_; }
  size_t tensor_count() const { return tensors_.size(); }

 private:
  Mast3rWeights() = default;
  Mast3rConfig config_;
  Precision precision_ = Precision::kF32;
  std::unordered_map<std::string, Tensor> tensors_;
  std::unordered_map<std::string, std::vector<float>> host_;
  std::unordered_set<std::string> in_out_;  // linear weights uploaded [in, out]
  std::unordered_set<std::string> ohwi_;    // convolution weights uploaded [Cout, KH, KW, Cin]
  size_t device_bytes_ = 0;
};

}  // namespace recon::gpu
