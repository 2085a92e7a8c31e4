// libFuzzer entry point for the safetensors reader and the MASt3R config parser.
// Build with -DRECON_FUZZ=ON and clang; run `fuzz_safetensors -max_total_time=60 [corpus_dir]`.
// Any crash, sanitizer report or a status code other than DATA_LOSS / INVALID_ARGUMENT aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu/weights/mast3r_config.h"
#include "gpu/weights/mast3r_weight_catalog.h"
#include "gpu/weights/safetensors.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_safetensors: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(  // NOLINT(readability-identifier-naming)
    const std::uint8_t* data, std::size_t size) {
  using namespace recon;
  using namespace recon::gpu;
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(data[i]);

  Result<SafetensorsFile> r = SafetensorsFile::from_bytes(std::move(bytes));
  if (!r.is_ok()) {
    const StatusCode code = r.status().code();
    require(code == StatusCode::kDataLoss || code == StatusCode::kInvalidArgument, "unexpected status code");
    return 0;
  }
  const SafetensorsFile& f = *r;
  for (const TensorInfo& t : f.tensors()) {
    require(f.data(t).size() == t.byte_size(), "span size");
    require(t.byte_size() == t.numel() * dtype_size(t.dtype), "size check");
    if (is_float_convertible(t.dtype)) {
      std::vector<float> out(t.numel());
      require(f.copy_as_f32(t.name, std::span<float>(out)).is_ok(), "copy_as_f32");
      std::vector<std::uint16_t> h(t.numel());
      require(f.copy_as_f16(t.name, std::span<std::uint16_t>(h)).is_ok(), "copy_as_f16");
    }
  }
  Result<Mast3rConfig> config = Mast3rConfig::from_safetensors(f);
  if (config.is_ok()) {
    // The catalog of a huge-but-valid config can be large; only check small ones.
    if (config->enc_depth + config->dec_depth <= 64) (void)check_weights(f, *config).status();
  } else {
    require(config.status().code() == StatusCode::kInvalidArgument, "config status code");
  }
  return 0;
}
