// Converts between fp32 and fp16 storage (round to nearest even); same dtype is a plain copy.
// Operands over max_binding_bytes() (layout.h) are converted in flat chunks, one dispatch each.
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

Status cast(Graph& g, const Arg& in, const Arg& out);

}  // namespace recon::gpu::ops
