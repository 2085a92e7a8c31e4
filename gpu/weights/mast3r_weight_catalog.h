// Every parameter an AsymmetricMASt3R state_dict holds for a given Mast3rConfig (official names and
// shapes, mast3r-spec.md §9), and the check that a weight file matches it. Names only: this file
// never converts or uploads tensor data.
//
// Aliases: each DPT head registers its four scratch convs twice, as `…scratch.layer{N+1}_rn.weight`
// (canonical here; the name HF's safetensors keeps) and `…scratch.layer_rn.{N}.weight`. A file may
// hold either name or both; check_weights() accepts all three cases and find() resolves them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/status.h"
#include "gpu/weights/mast3r_config.h"
#include "gpu/weights/safetensors.h"

namespace recon::gpu {

// The module a weight tensor belongs to, where it decides how the tensor may be laid out on the
// device (Mast3rWeights transposes linear weights and reorders convolution taps for the tensor
// cores; a transposed convolution's weight keeps PyTorch's layout).
enum class WeightKind { kOther, kLinear, kConv, kConvTranspose };

struct WeightSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string alias_of;  // for `…layer_rn.N.weight`: the canonical `…layerN+1_rn.weight`; else empty
  WeightKind kind = WeightKind::kOther;  // of a `….weight`; biases and norms are kOther
};

// In state_dict order, aliases included (1017 entries for the default config). The unused
// mask_token and refinenet4.resConfUnit1 are listed because checkpoints carry them. A DUNE config
// lists the DUNE encoder (`dune_backbone.…`, `norm.…`) in place of the CroCo one.
std::vector<WeightSpec> mast3r_weight_catalog(const Mast3rConfig& config);

// Which tensor of a checked file holds each catalog entry.
class Mast3rWeightMap {
 public:
  // The file's tensor name for catalog entry `name` (canonical or alias spelling), or nullptr when
  // `name` is not in the catalog.
  const std::string* find(std::string_view name) const;
  // Shorthand for file.find(*find(name)); nullptr when `name` is not in the catalog.
  const TensorInfo* find(const SafetensorsFile& file, std::string_view name) const;
  // Benign observations worth one log line, e.g. both alias names present.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  friend Result<Mast3rWeightMap> check_weights(const SafetensorsFile&, const Mast3rConfig&, std::size_t);
  std::map<std::string, std::string, std::less<>> file_name_;
  std::vector<std::string> notes_;
};

// OK when every catalog tensor is present (under either alias name) with the expected shape and a
// float dtype (F32/F16/BF16), nothing else is in the file, and alias pairs present twice hold the
// same bytes. Otherwise ONE kInvalidArgument listing every missing, unexpected, wrong-shaped,
// wrong-dtype and conflicting tensor, at most `max_listed` lines then "... and N more".
Result<Mast3rWeightMap> check_weights(const SafetensorsFile& file, const Mast3rConfig& config,
                                      std::size_t max_listed = 20);

}  // namespace recon::gpu
