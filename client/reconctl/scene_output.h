// Writes what `reconctl infer` fetched, in the formats recon-infer writes: every tensor as .npy
// (float32, C order, the daemon's shape), scene.ply (confidence-filtered points coloured by the
// input pixels; pts3d_2 is in view 1's frame, as MASt3R predicts it) and PNG previews of depth and
// confidence per view. Throws LocalFileError when a file cannot be written.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "recon/client/result.h"
#include "tools/io/image_io.h"

namespace reconctl {

struct SceneSummary {
  std::vector<std::string> files;  // written, in order
  size_t points_kept = 0, points_total = 0;
};

SceneSummary write_scene(recon::client::Result& result, const std::array<recon::io::Image, 2>& inputs,
                         const std::string& out_dir, float min_conf);

}  // namespace reconctl
