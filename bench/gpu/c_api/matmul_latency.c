/* matmul_latency: the latency of an N×N×N fp32 matmul (default 512) through librecon-runtime's
 * C API (recon/runtime.h), against the same work through the C++ runtime in the same process:
 *   c_immediate_us       median dispatch-to-completion of recon_matmul(ctx, NULL, …): the call
 *                        returns when the GPU finished (operands already on the device)
 *   c_sequence_1op_us    median recon_sequence_submit + recon_sequence_wait of a one-matmul sequence
 *   c_sequence_per_op_us median submit + wait of a sequence of OPS chained matmuls (default 64), / OPS
 *   cpp_graph_run_us     median gpu::Graph::run() of one matmul (the baseline of the first two)
 *   cpp_graph_per_op_us  median Graph::run() of the OPS-matmul chain, / OPS
 * and the ratios of the C figures to their baselines. One line per figure: NAME VALUE UNIT.
 * The C and C++ samples are taken in alternating blocks (5 rounds), so that drift of the clock
 * or the load hits both alike; each figure has 3 untimed warm-up runs first.
 *   matmul_latency [--device N] [--iters N] [--sequence-iters N] [--size N] [--ops N]
 * --iters: timed immediate calls, one-op replays and baseline runs each (default 200);
 * --sequence-iters: timed replays of each chain (default iters / 8, at least 5). */
#define _POSIX_C_SOURCE 199309L
#include <recon/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpp_baseline.h"

enum { ROUNDS = 5, WARMUP = 3 };

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare(const void* x, const void* y) {
  const double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof(double), compare);
  return v[n / 2];
}

static int check(recon_status status, const char* what) {
  if (status == RECON_OK) return 0;
  fprintf(stderr, "matmul_latency: %s: %s: %s\n", what, recon_runtime_status_name(status), recon_runtime_last_error());
  return 1;
}

/* `count` immediate calls, each one sample. */
static int time_immediate(recon_context* ctx, const recon_tensor* a, const recon_tensor* b, recon_tensor* c, int count,
                          double* samples) {
  for (int i = 0; i < count; ++i) {
    const double start = now_us();
    if (check(recon_matmul(ctx, NULL, a, b, c, 1.0f, 0.0f, 0), "recon_matmul")) return 1;
    samples[i] = now_us() - start;
  }
  return 0;
}

/* `count` submit + wait of `seq`, each one sample. */
static int time_sequence(recon_sequence* seq, int count, double* samples) {
  for (int i = 0; i < count; ++i) {
    const double start = now_us();
    if (check(recon_sequence_submit(seq), "recon_sequence_submit") ||
        check(recon_sequence_wait(seq), "recon_sequence_wait")) {
      return 1;
    }
    samples[i] = now_us() - start;
  }
  return 0;
}

static int parse(int argc, char** argv, uint32_t* device, int* iters, int* sequence_iters, int* n, int* ops) {
  for (int i = 1; i < argc; ++i) {
    if (i + 1 >= argc) return 1;
    const long v = strtol(argv[i + 1], NULL, 10);
    if (v < 0 || (v == 0 && strcmp(argv[i], "--device") != 0)) return 1;
    if (strcmp(argv[i], "--device") == 0) {
      *device = (uint32_t)v;
    } else if (strcmp(argv[i], "--iters") == 0) {
      *iters = (int)v;
    } else if (strcmp(argv[i], "--sequence-iters") == 0) {
      *sequence_iters = (int)v;
    } else if (strcmp(argv[i], "--size") == 0) {
      *n = (int)v;
    } else if (strcmp(argv[i], "--ops") == 0) {
      *ops = (int)v;
    } else {
      return 1;
    }
    ++i;
  }
  return 0;
}

int main(int argc, char** argv) {
  uint32_t device = 0;
  int iters = 200, sequence_iters = 0, n = 512, ops = 64;
  if (parse(argc, argv, &device, &iters, &sequence_iters, &n, &ops) != 0) {
    fprintf(stderr, "usage: matmul_latency [--device N] [--iters N] [--sequence-iters N] [--size N] [--ops N]\n");
    return 2;
  }
  if (sequence_iters == 0) sequence_iters = iters / 8 > 5 ? iters / 8 : 5;
  if (iters < ROUNDS) iters = ROUNDS;
  if (sequence_iters < ROUNDS) sequence_iters = ROUNDS;

  recon_device_info info = RECON_INIT(recon_device_info);
  if (check(recon_device_describe(device, &info), "recon_device_describe")) return 1;
  printf("device %u: %s; librecon-runtime %s; matmul %dx%dx%d f32\n", device, info.name, recon_runtime_version(), n, n,
         n);

  recon_context_options options = RECON_INIT(recon_context_options);
  options.pipeline_cache_path = "none";
  recon_context* ctx = NULL;
  if (check(recon_context_create(device, &options, &ctx), "recon_context_create")) return 1;
  const uint64_t shape[] = {(uint64_t)n, (uint64_t)n};
  const size_t count = (size_t)n * (size_t)n;
  float* host = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) host[i] = 1.0f / (float)n; /* every product stays 1/n */
  recon_tensor *a = NULL, *b = NULL, *c0 = NULL, *c1 = NULL;
  if (check(recon_tensor_create(ctx, RECON_F32, 2, shape, &a), "tensor") ||
      check(recon_tensor_create(ctx, RECON_F32, 2, shape, &b), "tensor") ||
      check(recon_tensor_create(ctx, RECON_F32, 2, shape, &c0), "tensor") ||
      check(recon_tensor_create(ctx, RECON_F32, 2, shape, &c1), "tensor") ||
      check(recon_tensor_upload(a, RECON_F32, host, count * sizeof(float)), "upload") ||
      check(recon_tensor_upload(b, RECON_F32, host, count * sizeof(float)), "upload")) {
    return 1;
  }
  /* A one-matmul sequence, and a chain of `ops`: c0 = a·b, c1 = c0·b, c0 = c1·b, … */
  recon_sequence *one = NULL, *chain = NULL;
  if (check(recon_sequence_create(ctx, &one), "recon_sequence_create") ||
      check(recon_matmul(ctx, one, a, b, c0, 1.0f, 0.0f, 0), "recon_matmul") ||
      check(recon_sequence_create(ctx, &chain), "recon_sequence_create")) {
    return 1;
  }
  for (int i = 0; i < ops; ++i) {
    const recon_tensor* in = i == 0 ? a : (i % 2 == 1 ? c0 : c1);
    if (check(recon_matmul(ctx, chain, in, b, i % 2 == 0 ? c0 : c1, 1.0f, 0.0f, 0), "recon_matmul")) return 1;
  }
  cpp_baseline* base = cpp_baseline_open(device, n, ops);
  if (base == NULL) return 1;

  double* immediate = malloc(sizeof(double) * (size_t)iters);
  double* one_op = malloc(sizeof(double) * (size_t)iters);
  double* cpp_single = malloc(sizeof(double) * (size_t)iters);
  double* chained = malloc(sizeof(double) * (size_t)sequence_iters);
  double* cpp_chain = malloc(sizeof(double) * (size_t)sequence_iters);
  double warm[WARMUP];
  /* Warm-up: the first immediate call records its graph, the first submit its sequence's. */
  if (time_immediate(ctx, a, b, c0, WARMUP, warm) || time_sequence(one, WARMUP, warm) ||
      time_sequence(chain, WARMUP, warm)) {
    return 1;
  }
  for (int r = 0; r < ROUNDS; ++r) {
    const int i0 = iters * r / ROUNDS, i1 = iters * (r + 1) / ROUNDS;
    const int s0 = sequence_iters * r / ROUNDS, s1 = sequence_iters * (r + 1) / ROUNDS;
    if (time_immediate(ctx, a, b, c0, i1 - i0, immediate + i0) ||
        cpp_baseline_time(base, 0, i1 - i0, cpp_single + i0) != 0 || time_sequence(one, i1 - i0, one_op + i0) ||
        time_sequence(chain, s1 - s0, chained + s0) || cpp_baseline_time(base, 1, s1 - s0, cpp_chain + s0) != 0) {
      return 1;
    }
  }
  /* The chain's last output holds 1/n everywhere if the work was done. */
  float* result = malloc(count * sizeof(float));
  if (check(recon_tensor_download(ops % 2 == 1 ? c0 : c1, RECON_F32, result, count * sizeof(float)), "download")) {
    return 1;
  }
  const float probe = result[count / 2];
  if (probe < 0.99f / (float)n || probe > 1.01f / (float)n) {
    fprintf(stderr, "matmul_latency: wrong result %g (want %g)\n", (double)probe, 1.0 / n);
    return 1;
  }

  const double c_immediate = median(immediate, iters), c_one = median(one_op, iters);
  const double c_per_op = median(chained, sequence_iters) / ops;
  const double cpp_run = median(cpp_single, iters), cpp_per_op = median(cpp_chain, sequence_iters) / ops;
  printf("iters %d, sequence iters %d, ops per sequence %d\n", iters, sequence_iters, ops);
  printf("c_immediate_us %.2f us\n", c_immediate);
  printf("c_sequence_1op_us %.2f us\n", c_one);
  printf("c_sequence_per_op_us %.2f us\n", c_per_op);
  printf("cpp_graph_run_us %.2f us\n", cpp_run);
  printf("cpp_graph_per_op_us %.2f us\n", cpp_per_op);
  printf("ratio_c_immediate_to_cpp %.3f x\n", c_immediate / cpp_run);
  printf("ratio_c_sequence_1op_to_cpp %.3f x\n", c_one / cpp_run);
  printf("ratio_c_sequence_per_op_to_cpp %.3f x\n", c_per_op / cpp_per_op);
  printf("c_immediate_gflops %.1f GFLOP/s\n", 2.0 * n * n * (double)n / c_immediate / 1e3);

  cpp_baseline_close(base);
  recon_sequence_release(one);
  recon_sequence_release(chain);
  recon_tensor_release(a), recon_tensor_release(b), recon_tensor_release(c0), recon_tensor_release(c1);
  recon_context_release(ctx);
  free(host), free(result), free(immediate), free(one_op), free(cpp_single), free(chained), free(cpp_chain);
  return 0;
}
