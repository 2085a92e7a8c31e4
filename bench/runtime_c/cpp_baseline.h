/* The baseline of matmul_latency.c: the same matmuls through the C++ runtime (gpu::Graph, as the
 * model engines use it), on the same device in the same process. C-callable. */
#ifndef RECON_BENCH_RUNTIME_C_CPP_BASELINE_H
#define RECON_BENCH_RUNTIME_C_CPP_BASELINE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpp_baseline_result {
  double single_us; /* median Graph::run() of one n×n×n matmul */
  double per_op_us; /* median Graph::run() of `ops` chained matmuls, divided by ops */
} cpp_baseline_result;

/* 0 on success; else prints why to stderr and returns 1. */
int cpp_baseline_run(uint32_t device, int n, int ops, int iters, int sequence_iters, cpp_baseline_result* out);

#ifdef __cplusplus
}
#endif

#endif
