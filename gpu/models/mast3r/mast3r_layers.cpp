#include "gpu/models/mast3r/mast3r_layers.h"

// TEMPORARY while the op library's linear/conv/upsample/pixel-shuffle land: every call fails with
// UNIMPLEMENTED so nothing can mistake this for a working forward pass.
namespace recon::gpu::mast3r {

Status linear(Graph&, const Capabilities&, const Arg&, const Tensor&, const Tensor*, const Arg&, Act, const Arg*) {
  return unimplemented("mast3r::linear awaits ops::linear");
}
Status conv2d(Graph&, const Capabilities&, const Arg&, const Tensor&, const Tensor*, const Arg&, int, int, Act,
              const Arg*) {
  return unimplemented("mast3r::conv2d awaits ops::conv2d");
}
Status conv_transpose2d(Graph&, const Capabilities&, const Arg&, const Tensor&, const Tensor*, const Arg&, int) {
  return unimplemented("mast3r::conv_transpose2d awaits ops::conv_transpose2d");
}
Status upsample2x(Graph&, const Arg&, const Arg&) { return unimplemented("mast3r::upsample2x awaits ops::upsample"); }
Status tokens_pixel_shuffle(Graph&, const Arg&, const Arg&, int) {
  return unimplemented("mast3r::tokens_pixel_shuffle awaits ops::pixel_shuffle");
}

}  // namespace recon::gpu::mast3r
