// Reading ONNX backend-test data (TensorProto files) and comparing outputs as ONNX's own runner
// does: |got - want| <= atol + rtol * |want| for floats, NaN matching NaN and an infinity itself;
// integers and booleans exactly. Shared by the node-suite and light-model tests.
#pragma once

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_file.h"
#include "gpu/models/onnx/onnx_host.h"

namespace recon::gpu::onnx {

// prefix0.pb, prefix1.pb... (input_ or output_) in `dir`; an error for data recon does not read
// (strings, sequences, optionals).
inline Result<std::vector<HostTensor>> read_tensor_set(const std::filesystem::path& dir, const std::string& prefix) {
  std::vector<HostTensor> out;
  for (int i = 0;; ++i) {
    const std::filesystem::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!std::filesystem::exists(p)) break;
    RECON_ASSIGN_OR_RETURN(HostTensor t, read_tensor_file(p.string()));
    out.push_back(std::move(t));
  }
  return out;
}

// "" when `got` matches `want`, else the first difference.
inline std::string compare_as_onnx(const HostTensor& got, const HostTensor& want, double rtol = 1e-3,
                                   double atol = 1e-7) {
  if (got.dims != want.dims) return "shape " + shape_string(got.dims) + " != expected " + shape_string(want.dims);
  Result<std::vector<double>> g = host_doubles(got), w = host_doubles(want);
  if (!g || !w) return "unreadable values";
  const bool exact =
      !(want.type == ElemType::kFloat || want.type == ElemType::kFloat16 || want.type == ElemType::kDouble);
  for (size_t i = 0; i < w->size(); ++i) {
    const double a = (*g)[i], b = (*w)[i];
    if (std::isnan(b) && std::isnan(a)) continue;
    if (std::isinf(b) && a == b) continue;
    const double tol = exact ? 0.0 : atol + rtol * std::abs(b);
    if (!(std::abs(a - b) <= tol)) {
      std::ostringstream s;
      s << "element " << i << ": " << a << " != expected " << b;
      return s.str();
    }
  }
  return {};
}

}  // namespace recon::gpu::onnx
