// The precision vocabulary: see precision.h.
#include "gpu/precision.h"

#include <cctype>
#include <string>

namespace recon::gpu {

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kF32:
      return "fp32";
    case Precision::kF32Split:
      return "fp32-split";
    case Precision::kF16:
      return "fp16";
    case Precision::kF16Heads:
      return "fp16-heads";
  }
  return "?";
}

Result<Precision> parse_precision(std::string_view name) {
  std::string t(name);
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "fp32" || t == "f32") return Precision::kF32;
  if (t == "fp32-split") return Precision::kF32Split;
  if (t == "fp16" || t == "f16") return Precision::kF16;
  if (t == "fp16-heads") return Precision::kF16Heads;
  return invalid_argument("expected fp32, fp32-split, fp16 or fp16-heads, got '" + std::string(name) + "'");
}

}  // namespace recon::gpu
