// Writes what `reconctl match` fetched: every tensor of the match handle as .npy (matches_1/2
// int32 [K, 2] pixel (x, y); match_conf, pts3d_1/2 float32) and matches.png, the two prepared
// input images side by side with a line per match (at most kMaxDrawnMatches, evenly spread over
// the list). Throws LocalFileError when a file cannot be written.
#pragma once

#include <string>
#include <vector>

#include "recon/client/result.h"
#include "tools/io/image_io.h"

namespace reconctl {

inline constexpr size_t kMaxDrawnMatches = 200;

// Returns the names of the files written, in order.
std::vector<std::string> write_matches(recon::client::Result& matches, const recon::io::Image& first,
                                       const recon::io::Image& second, const std::string& out_dir);

}  // namespace reconctl
