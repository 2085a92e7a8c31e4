// Builds the recorded graph one op benchmark replays: the case's operands (seeded random values),
// and `plan.ops_per_replay` applications of the op strung together as op_cases.h describes (a
// chain over a ring of buffers for memory-bound ops, repetitions for compute-bound ones).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/ops/op_cases.h"
#include "gpu/graph.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::bench {

struct BuiltCase {
  std::vector<gpu::Tensor> tensors;  // every operand; they outlive the graph's replays
  std::unique_ptr<gpu::Graph> graph;
  std::string path;  // which kernel path the op took, where it has a choice ("coopmat", "scalar")
};

Result<BuiltCase> build_case(gpu::Runtime& rt, const OpCase& c, const CasePlan& plan);

}  // namespace recon::bench
