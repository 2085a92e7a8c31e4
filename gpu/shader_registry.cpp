#include "gpu/shader_registry.h"

#include "gpu/hash.h"

namespace recon::gpu {

const ShaderBlob* find_shader(std::string_view name) {
  for (const auto& s : all_shaders()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

uint64_t shader_set_hash() {
  static const uint64_t hash = [] {
    uint64_t h = kFnvOffset;
    for (const auto& s : all_shaders()) {
      h = fnv1a(std::string_view(s.name).data(), std::string_view(s.name).size(), h);
      h = fnv1a(s.words, s.word_count * sizeof(uint32_t), h);
    }
    return h;
  }();
  return hash;
}

}  // namespace recon::gpu
