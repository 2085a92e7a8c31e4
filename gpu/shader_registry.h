// The embedded SPIR-V of every shader variant (generated from shaders/variants.cmake).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace recon::gpu {

struct ShaderBlob {
  const char* name;
  const uint32_t* words;
  size_t word_count;
};

std::span<const ShaderBlob> all_shaders();  // defined in the generated shader_table.cpp
const ShaderBlob* find_shader(std::string_view name);
// FNV-1a hash over every variant's name and words; keys the on-disk pipeline cache.
uint64_t shader_set_hash();

}  // namespace recon::gpu
