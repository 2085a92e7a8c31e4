// The probe behind Capabilities::coopmat_acc_layout. A v1 NV cooperative matrix does not say which
// (row, column) a lane's element i is; flash attention wants exactly that, to keep each query row's
// softmax in registers (shaders/attention_cm_rows.comp). So Runtime::create runs a one-subgroup
// shader that loads a matrix of known values (shaders/coopmat_layout_probe.comp) and analyses where
// the values landed. Kernels use the layout only when the analysis finds it regular.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/capabilities.h"
#include "gpu/status.h"

namespace recon::gpu {

class Runtime;

// values[lane · elements + i] = row·16 + column of lane `lane`'s element i, for `lanes` lanes.
// Returns the layout when every lane holds exactly two rows, half of its elements in each, in one
// pattern (the slot mask) shared by all lanes; the lanes holding a row form an aligned cluster of
// a power-of-two size that holds both of its rows; and the 256 positions each appear once.
// Otherwise a layout with two_rows_per_lane() false.
CoopMatAccLayout analyse_coopmat_acc_layout(const std::vector<float>& values, uint32_t lanes, uint32_t elements);

// Runs the probe on the device (which must have VK_NV_cooperative_matrix) and analyses it.
Result<CoopMatAccLayout> probe_coopmat_acc_layout(Runtime& rt);

}  // namespace recon::gpu
