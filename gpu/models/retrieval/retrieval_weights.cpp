// Loads the retrieval head from safetensors: config from the metadata (or the tensor names), the
// exact expected key set checked by name and shape, float64/f32/f16/bf16 values converted to f32.
#include "gpu/models/retrieval/retrieval_weights.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>

namespace recon::gpu {
namespace {

using Expected = std::map<std::string, std::vector<int64_t>>;

std::string projector_key(size_t module, const char* what) {
  return "projector." + std::to_string(module) + "." + what;
}

// Infers the head from the tensor names when the file has no metadata.
Result<RetrievalConfig> infer_config(const SafetensorsFile& file) {
  RetrievalConfig c;
  c.prewhiten = file.find("prewhiten.m") != nullptr;
  c.postwhiten = file.find("postwhiten.m") != nullptr;
  for (size_t module = 0;; module += 3) {
    const TensorInfo* w = file.find(projector_key(module, "weight"));
    if (!w || w->shape.size() != 2) break;
    if (module == 0) c.dim = w->shape[1];
    c.hdims.push_back(w->shape[0]);
  }
  if (c.prewhiten) {
    const TensorInfo* m = file.find("prewhiten.m");
    if (m->shape.size() == 2) c.dim = m->shape[1];
  }
  if (!c.prewhiten && c.hdims.empty()) {
    return not_found("no retrieval tensors (prewhiten.m, projector.0.weight) and no \"" +
                     std::string(kRetrievalMetadataKey) + "\" metadata");
  }
  RECON_RETURN_IF_ERROR(c.validate());
  return c;
}

Expected expected_tensors(const RetrievalConfig& c) {
  Expected e;
  if (c.prewhiten) {
    e["prewhiten.m"] = {1, c.dim};
    e["prewhiten.p"] = {c.dim, c.dim};
  }
  int64_t in = c.dim;
  for (size_t i = 0; i < c.hdims.size(); ++i) {
    const int64_t out = c.hdims[i];
    e[projector_key(3 * i, "weight")] = {out, in};
    e[projector_key(3 * i, "bias")] = {out};
    if (i + 1 < c.hdims.size()) {
      e[projector_key(3 * i + 1, "weight")] = {out};
      e[projector_key(3 * i + 1, "bias")] = {out};
    }
    in = out;
  }
  if (c.postwhiten) {
    e["postwhiten.m"] = {1, c.out_dim()};
    e["postwhiten.p"] = {c.out_dim(), c.out_dim()};
  }
  return e;
}

Status check_names(const SafetensorsFile& file, const Expected& expected) {
  std::string missing, unexpected, mismatched;
  auto append = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; };
  for (const auto& [name, shape] : expected) {
    const TensorInfo* t = file.find(name);
    if (!t) {
      append(missing, name);
    } else if (t->shape != shape) {
      append(mismatched, name + " is " + shape_to_string(t->shape) + ", expected " + shape_to_string(shape));
    }
  }
  for (const TensorInfo& t : file.tensors()) {
    if (!expected.count(t.name)) append(unexpected, t.name);
  }
  std::string problems;
  if (!missing.empty()) problems += "missing tensor(s): " + missing + "; ";
  if (!unexpected.empty()) problems += "unexpected tensor(s): " + unexpected + "; ";
  if (!mismatched.empty()) problems += "shape mismatch: " + mismatched + "; ";
  if (problems.empty()) return Status::ok();
  problems.resize(problems.size() - 2);
  return invalid_argument("retrieval weights do not match the config: " + problems);
}

// The tensor in float64 (exact for every accepted dtype).
Result<std::vector<double>> read_as_f64(const SafetensorsFile& file, const std::string& name) {
  const TensorInfo* t = file.find(name);
  if (t->dtype != Dtype::kF64) {
    RECON_ASSIGN_OR_RETURN(std::vector<float> f, file.read_f32(name));
    return std::vector<double>(f.begin(), f.end());
  }
  std::vector<double> out(t->numel());
  std::memcpy(out.data(), file.data(*t).data(), out.size() * sizeof(double));
  return out;
}

// `residual` = false: the values rounded to f32; true: what that rounding lost, rounded to f32.
Result<Tensor> upload(Runtime& rt, const SafetensorsFile& file, const std::string& name,
                      const std::vector<int64_t>& shape, bool residual = false) {
  RECON_ASSIGN_OR_RETURN(std::vector<double> d, read_as_f64(file, name));
  std::vector<float> v(d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    v[i] = static_cast<float>(d[i]);
    if (residual) v[i] = static_cast<float>(d[i] - static_cast<double>(v[i]));
  }
  for (float x : v) {
    if (!std::isfinite(x)) return invalid_argument("retrieval weights: " + name + " has a non-finite value in f32");
  }
  Result<Tensor> t =
      Tensor::from_host(rt, DType::kF32, shape, v.data(), v.size() * sizeof(float), MemoryRole::kWeights);
  if (!t.is_ok()) return t.status().with_context("uploading " + name);
  return t;
}

}  // namespace

Result<LoadedRetrieval> load_retrieval_weights(Runtime& rt, const SafetensorsFile& file) {
  LoadedRetrieval out;
  if (const auto meta = file.metadata(kRetrievalMetadataKey)) {
    Result<RetrievalConfig> c = RetrievalConfig::from_json(*meta);
    if (!c.is_ok()) return c.status().with_context("metadata \"" + std::string(kRetrievalMetadataKey) + "\"");
    out.config = std::move(c).value();
  } else {
    RECON_ASSIGN_OR_RETURN(out.config, infer_config(file));
  }
  const RetrievalConfig& c = out.config;
  const Expected expected = expected_tensors(c);
  RECON_RETURN_IF_ERROR(check_names(file, expected));
  for (const auto& [name, shape] : expected) {
    const Dtype d = file.find(name)->dtype;
    if (d != Dtype::kF64 && !is_float_convertible(d)) {
      return invalid_argument("retrieval weights: " + name + " has dtype " + dtype_name(d) + " (F64, F32, F16, BF16)");
    }
  }

  out.weights = std::make_unique<RetrievalWeights>();
  auto& w = *out.weights;
  auto load_whitener = [&](const std::string& prefix) -> Result<WhitenerWeights> {
    WhitenerWeights ww;
    RECON_ASSIGN_OR_RETURN(ww.mean_hi, upload(rt, file, prefix + ".m", expected.at(prefix + ".m")));
    RECON_ASSIGN_OR_RETURN(ww.mean_lo, upload(rt, file, prefix + ".m", expected.at(prefix + ".m"), true));
    RECON_ASSIGN_OR_RETURN(ww.projection, upload(rt, file, prefix + ".p", expected.at(prefix + ".p")));
    return ww;
  };
  if (c.prewhiten) {
    RECON_ASSIGN_OR_RETURN(w.prewhiten, load_whitener("prewhiten"));
  }
  for (size_t i = 0; i < c.hdims.size(); ++i) {
    ProjectorLayer layer;
    const std::string lw = projector_key(3 * i, "weight"), lb = projector_key(3 * i, "bias");
    RECON_ASSIGN_OR_RETURN(layer.weight, upload(rt, file, lw, expected.at(lw)));
    RECON_ASSIGN_OR_RETURN(layer.bias, upload(rt, file, lb, expected.at(lb)));
    if (i + 1 < c.hdims.size()) {
      const std::string nw = projector_key(3 * i + 1, "weight"), nb = projector_key(3 * i + 1, "bias");
      RECON_ASSIGN_OR_RETURN(layer.norm_weight, upload(rt, file, nw, expected.at(nw)));
      RECON_ASSIGN_OR_RETURN(layer.norm_bias, upload(rt, file, nb, expected.at(nb)));
    }
    w.projector.push_back(std::move(layer));
  }
  if (c.postwhiten) {
    RECON_ASSIGN_OR_RETURN(w.postwhiten, load_whitener("postwhiten"));
  }
  return out;
}

}  // namespace recon::gpu
