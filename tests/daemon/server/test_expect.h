// Expected results for the server tests: the same pair run through an in-process Mast3rEngine
// (the daemon must give identical bytes), and helpers to read fetched tensors.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpu/models/mast3r/mast3r_engine.h"
#include "tests/daemon/server/test_client.h"

namespace recon::daemon::testing {

using TensorBytes = std::map<std::string, std::vector<uint8_t>>;

// Runs (a, b) — packed RGB8 at model size — on `engine` and downloads the eight outputs.
TensorBytes engine_outputs(gpu::Runtime& rt, gpu::Mast3rEngine& engine, const std::vector<uint8_t>& a,
                           const std::vector<uint8_t>& b, uint32_t height, uint32_t width);

// max |a - b| / (1 + |b|) over two float32 buffers (infinity when their sizes differ).
double max_relative_error(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

// The tensors of an inline FetchResult, by name.
TensorBytes inline_tensors(const Answer& fetch);

// The tensors of a region FetchResult, read from `base` (the region's mapping).
TensorBytes region_tensors(const Answer& fetch, const uint8_t* base);

}  // namespace recon::daemon::testing
