/* The baseline of matmul_latency.c: the same matmuls through the C++ runtime (gpu::Graph, as the
 * model engines use it), on the same device in the same process. C-callable, so that the C
 * program can interleave its blocks of samples with the baseline's. */
#ifndef RECON_BENCH_RUNTIME_C_CPP_BASELINE_H
#define RECON_BENCH_RUNTIME_C_CPP_BASELINE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cpp_baseline cpp_baseline;

/* A runtime on `device`, n×n f32 operands (every element 1/n), one recorded Graph holding one
 * matmul and one holding `ops` chained matmuls, each run 3 times to warm up. NULL on failure
 * (the reason printed to stderr). */
cpp_baseline* cpp_baseline_open(uint32_t device, int n, int ops);
/* Runs the one-matmul graph (chain = 0) or the chain (chain = 1) `count` times with
 * Graph::run(), storing each run's microseconds in samples[0..count); 0 on success. */
int cpp_baseline_time(cpp_baseline* baseline, int chain, int count, double* samples);
void cpp_baseline_close(cpp_baseline* baseline);

#ifdef __cplusplus
}
#endif

#endif
