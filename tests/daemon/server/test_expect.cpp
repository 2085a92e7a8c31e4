// Expected results: see test_expect.h.
#include "tests/daemon/server/test_expect.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace recon::daemon::testing {

TensorBytes engine_outputs(gpu::Runtime& rt, gpu::Mast3rEngine& engine, const std::vector<uint8_t>& a,
                           const std::vector<uint8_t>& b, uint32_t height, uint32_t width) {
  const gpu::ImageU8View v1{a.data(), height, width, 0}, v2{b.data(), height, width, 0};
  auto result = engine.infer(std::span(&v1, 1), std::span(&v2, 1));
  TensorBytes out;
  if (!result.is_ok()) return out;
  const gpu::Mast3rOutputs& t = result->tensors;
  const std::pair<const char*, const gpu::Tensor*> named[] = {
      {"pts3d_1", &t.pts3d[0]},         {"pts3d_2", &t.pts3d[1]},        {"conf_1", &t.conf[0]},
      {"conf_2", &t.conf[1]},           {"desc_1", &t.desc[0]},          {"desc_2", &t.desc[1]},
      {"desc_conf_1", &t.desc_conf[0]}, {"desc_conf_2", &t.desc_conf[1]}};
  for (const auto& [name, tensor] : named) {
    std::vector<uint8_t> bytes(tensor->bytes());
    if (tensor->download(rt, bytes.data(), bytes.size()).is_ok()) out[name] = std::move(bytes);
  }
  return out;
}

double max_relative_error(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size() || a.size() % 4 != 0) return std::numeric_limits<double>::infinity();
  std::vector<float> x(a.size() / 4), y(b.size() / 4);
  std::memcpy(x.data(), a.data(), a.size());
  std::memcpy(y.data(), b.data(), b.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = std::abs(double(x[i]) - double(y[i])) / (1.0 + std::abs(double(y[i])));
    if (!(e <= worst)) worst = e;  // NaN counts as worst
  }
  return worst;
}

TensorBytes inline_tensors(const Answer& fetch) {
  TensorBytes out;
  const auto* result = fetch.response->body_as_FetchResult();
  if (result == nullptr || result->tensors() == nullptr) return out;
  for (const wire::FetchedTensor* t : *result->tensors()) {
    if (t->info() == nullptr || t->info()->name() == nullptr || t->data() == nullptr) continue;
    out[t->info()->name()->str()] = std::vector<uint8_t>(t->data()->begin(), t->data()->end());
  }
  return out;
}

TensorBytes region_tensors(const Answer& fetch, const uint8_t* base) {
  TensorBytes out;
  const auto* result = fetch.response->body_as_FetchResult();
  if (result == nullptr || result->tensors() == nullptr) return out;
  for (const wire::FetchedTensor* t : *result->tensors()) {
    if (t->info() == nullptr || t->info()->name() == nullptr) continue;
    const uint8_t* begin = base + t->offset();
    out[t->info()->name()->str()] = std::vector<uint8_t>(begin, begin + t->info()->byte_size());
  }
  return out;
}

}  // namespace recon::daemon::testing
