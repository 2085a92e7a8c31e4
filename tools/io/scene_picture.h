// A picture of a reconstructed scene that a person can look at without a 3D viewer: the coloured
// points splatted with a z-buffer and every camera drawn as a labelled frustum. CPU only and
// deterministic (the same scene gives the same pixels); it draws, it never writes files.
#pragma once

#include <array>
#include <cstdint>

#include "tools/io/image_io.h"
#include "tools/io/scene_export.h"

namespace recon::io {

// The scene seen from behind and above the cameras, looking at the middle of the points from far
// enough that the central 90 % of the points and every camera centre fit. Camera i is a frustum in
// scene_camera_color(i) labelled with i. RGB, dark grey background.
Image render_scene_picture(const Scene& scene, int width, int height);

// render_scene_picture's view (left half) beside a top-down view of the same scene (right half),
// in which the cameras' mean viewing direction points up the picture.
Image render_scene_overview(const Scene& scene, int width, int height);

// The bright colour camera `index` is drawn in (a palette of eight, repeating).
std::array<uint8_t, 3> scene_camera_color(int index);

}  // namespace recon::io
