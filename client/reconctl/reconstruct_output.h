// Writes what `reconctl reconstruct` fetched from the daemon's reconstruct job
// (daemon/serving/jobs/reconstruct/reconstruct_outputs.h names the tensors) as the files people
// open, in OUT:
//   cameras.json           every camera (component, intrinsics and pose in the original image's
//                          pixels, COLMAP's pixel convention)
//   sparse/0/*.txt         COLMAP's text model of the largest component (OUT is a COLMAP scene
//                          once the images are copied into OUT/images/)
//   scene.ply              the largest component's points, coloured by the input pixels
//   scene.png              a picture of the points and the cameras
//   depth/NAME.npy, .png   per image: z-depth at model resolution, and a preview
// Throws LocalFileError when a file cannot be written.
#pragma once

#include <string>
#include <vector>

#include "recon/client/result.h"
#include "tools/io/official_resize.h"
#include "tools/io/scene_export.h"

namespace reconctl {

struct ReconstructSummary {
  std::vector<std::string> files;
  size_t cameras = 0, cameras_placed = 0;  // in all, and in the largest component
  size_t points = 0;                       // in scene.ply
  int components = 0;
};

// The fetched result as a scene in the original images' pixels: every camera, and the points of
// component 0 with their colours and their one observation (thinned to at most `max_track_points`
// tracked points for the COLMAP model; scene.ply keeps every point).
recon::io::Scene scene_from_result(recon::client::Result& result, const std::vector<recon::io::PreparedImage>& images,
                                   const std::vector<std::string>& names);

ReconstructSummary write_reconstruction(recon::client::Result& result,
                                        const std::vector<recon::io::PreparedImage>& images,
                                        const std::vector<std::string>& paths, const std::string& out_dir,
                                        size_t max_colmap_points);

}  // namespace reconctl
