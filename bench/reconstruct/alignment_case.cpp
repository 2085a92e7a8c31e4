// Reading a sparse-alignment case: see alignment_case.h.
#include "bench/reconstruct/alignment_case.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <utility>

#include "gpu/weights/safetensors.h"

namespace recon::bench {

namespace {

using gpu::Dtype;
using gpu::SafetensorsFile;

template <typename Out, typename In>
void convert(std::span<const std::byte> bytes, std::vector<Out>& out) {
  out.resize(bytes.size() / sizeof(In));
  for (std::size_t i = 0; i < out.size(); ++i) {
    In v;
    std::memcpy(&v, bytes.data() + i * sizeof(In), sizeof(In));  // the mapping has no alignment guarantee
    out[i] = static_cast<Out>(v);
  }
}

// An I32, I64, F32 or F64 tensor of `numel` elements (any if numel < 0), converted to Out.
template <typename Out>
Result<std::vector<Out>> read_as(const SafetensorsFile& file, const std::string& name, long long numel = -1) {
  const gpu::TensorInfo* info = file.find(name);
  if (info == nullptr) return not_found("no tensor '" + name + "'");
  if (numel >= 0 && info->numel() != static_cast<std::uint64_t>(numel)) {
    return invalid_argument("'" + name + "' has shape " + gpu::shape_to_string(info->shape) + "; expected " +
                            std::to_string(numel) + " elements");
  }
  std::vector<Out> out;
  const std::span<const std::byte> bytes = file.data(*info);
  switch (info->dtype) {
    case Dtype::kI32:
      convert<Out, std::int32_t>(bytes, out);
      break;
    case Dtype::kI64:
      convert<Out, std::int64_t>(bytes, out);
      break;
    case Dtype::kF32:
      convert<Out, float>(bytes, out);
      break;
    case Dtype::kF64:
      convert<Out, double>(bytes, out);
      break;
    default:
      return invalid_argument("'" + name + "' is " + gpu::dtype_name(info->dtype) + "; expected I32, I64, F32 or F64");
  }
  return out;
}

}  // namespace

void Prediction::add_to(gpu::CanonicalViewBuilder& builder) const {
  if (pts3d_f64.empty()) {
    builder.add(std::span<const float>(pts3d), std::span<const float>(conf));
  } else {
    builder.add(std::span<const double>(pts3d_f64), std::span<const double>(conf_f64));
  }
}

Result<AlignmentCase> load_alignment_case(const std::string& path) {
  RECON_ASSIGN_OR_RETURN(const SafetensorsFile file, SafetensorsFile::open(path));
  AlignmentCase c;
  if (const auto s = file.metadata("subsample")) c.subsample = std::atoi(std::string(*s).c_str());
  RECON_ASSIGN_OR_RETURN(const std::vector<int> hw, read_as<int>(file, "image_hw"));
  const std::size_t n = hw.size() / 2;
  c.own.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    c.height.push_back(hw[2 * i]);
    c.width.push_back(hw[2 * i + 1]);
    const long long pixels = static_cast<long long>(hw[2 * i]) * hw[2 * i + 1];
    for (int k = 0; file.find("own." + std::to_string(i) + "." + std::to_string(k) + ".pts3d") != nullptr; ++k) {
      const std::string prefix = "own." + std::to_string(i) + "." + std::to_string(k);
      Prediction p;
      const gpu::TensorInfo* info = file.find(prefix + ".pts3d");
      if (info->dtype == Dtype::kF64) {
        RECON_ASSIGN_OR_RETURN(p.pts3d_f64, read_as<double>(file, prefix + ".pts3d", 3 * pixels));
        RECON_ASSIGN_OR_RETURN(p.conf_f64, read_as<double>(file, prefix + ".conf", pixels));
      } else {
        RECON_ASSIGN_OR_RETURN(p.pts3d, read_as<float>(file, prefix + ".pts3d", 3 * pixels));
        RECON_ASSIGN_OR_RETURN(p.conf, read_as<float>(file, prefix + ".conf", pixels));
      }
      c.own[i].push_back(std::move(p));
      ++c.predictions;
    }
  }
  RECON_ASSIGN_OR_RETURN(const std::vector<int> pairs, read_as<int>(file, "pairs"));
  for (std::size_t p = 0; p < pairs.size() / 2; ++p) {
    const std::string prefix = "match." + std::to_string(p);
    gpu::PairMatches m;
    m.image_a = pairs[2 * p];
    m.image_b = pairs[2 * p + 1];
    RECON_ASSIGN_OR_RETURN(m.conf, read_as<float>(file, prefix + ".conf"));
    const auto count = static_cast<long long>(m.conf.size());
    RECON_ASSIGN_OR_RETURN(m.xy_a, read_as<std::int32_t>(file, prefix + ".xy_a", 2 * count));
    RECON_ASSIGN_OR_RETURN(m.xy_b, read_as<std::int32_t>(file, prefix + ".xy_b", 2 * count));
    c.matches += m.conf.size();
    c.pairs.push_back(std::move(m));
  }
  if (file.find("gt.cam2w") != nullptr) {
    RECON_ASSIGN_OR_RETURN(const std::vector<double> cam2w,
                           read_as<double>(file, "gt.cam2w", 16 * static_cast<long long>(n)));
    RECON_ASSIGN_OR_RETURN(c.gt_focal, read_as<double>(file, "gt.focal", static_cast<long long>(n)));
    c.gt_cam_to_world.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t k = 0; k < 16; ++k) c.gt_cam_to_world[i][k] = cam2w[16 * i + k];
    }
  }
  return c;
}

Result<std::vector<gpu::CanonicalView>> canonical_views(const AlignmentCase& c) {
  std::vector<gpu::CanonicalView> views;
  for (std::size_t i = 0; i < c.own.size(); ++i) {
    gpu::CanonicalViewBuilder builder(c.height[i], c.width[i], c.subsample);
    for (const Prediction& p : c.own[i]) p.add_to(builder);
    Result<gpu::CanonicalView> view = builder.finish();
    if (!view.is_ok()) return view.status().with_context("the canonical view of image " + std::to_string(i));
    views.push_back(std::move(view).value());
  }
  return views;
}

}  // namespace recon::bench
