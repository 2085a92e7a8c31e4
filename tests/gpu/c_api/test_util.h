/* Helpers the C tests of recon/runtime.h share (C11): CHECK macros that count failures instead of
 * stopping, the device to test on, tensors from host floats and back, and a seeded generator.
 * Header-only (static functions), so each test stays one C file built against the installed
 * library by pkg-config. */
#ifndef RECON_TESTS_RUNTIME_C_TEST_UTIL_H
#define RECON_TESTS_RUNTIME_C_TEST_UTIL_H

#include <math.h>
#include <recon/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#define CHECK_OK(call)                                                               \
  do {                                                                               \
    recon_status check_status_ = (call);                                             \
    if (check_status_ != RECON_OK) {                                                 \
      fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call,      \
              recon_runtime_status_name(check_status_), recon_runtime_last_error()); \
      ++failures;                                                                    \
    }                                                                                \
  } while (0)

/* The call fails with `code` and a message containing `words`. */
#define CHECK_FAILS(call, code, words)                                                                               \
  do {                                                                                                               \
    recon_status check_status_ = (call);                                                                             \
    if (check_status_ != (code) || strstr(recon_runtime_last_error(), (words)) == NULL) {                            \
      fprintf(stderr, "%s:%d: %s returned %s (\"%s\"); %s with \"%s\" expected\n", __FILE__, __LINE__, #call,        \
              recon_runtime_status_name(check_status_), recon_runtime_last_error(), recon_runtime_status_name(code), \
              (words));                                                                                              \
      ++failures;                                                                                                    \
    }                                                                                                                \
  } while (0)

static uint32_t rng_state = 12345u;
/* Uniform in [lo, hi). */
static inline float uniform(float lo, float hi) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

static inline float* random_floats(size_t n, float lo, float hi) {
  float* v = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) v[i] = uniform(lo, hi);
  return v;
}

static inline size_t numel(uint32_t rank, const uint64_t* shape) {
  size_t n = 1;
  for (uint32_t i = 0; i < rank; ++i) n *= (size_t)shape[i];
  return n;
}

/* The device the tests run on: RECON_TEST_DEVICE (an index), else the first CPU device
 * (lavapipe), else device 0. */
static inline uint32_t test_device(void) {
  const char* env = getenv("RECON_TEST_DEVICE");
  if (env != NULL && *env != '\0') return (uint32_t)strtoul(env, NULL, 10);
  uint32_t count = 0;
  if (recon_device_count(&count) != RECON_OK) return 0;
  for (uint32_t i = 0; i < count; ++i) {
    recon_device_info info = RECON_INIT(recon_device_info);
    if (recon_device_describe(i, &info) == RECON_OK && info.type == RECON_DEVICE_CPU) return i;
  }
  return 0;
}

static inline recon_context* open_context(void) {
  recon_context_options options = RECON_INIT(recon_context_options);
  options.pipeline_cache_path = "none";
  recon_context* context = NULL;
  if (recon_context_create(test_device(), &options, &context) != RECON_OK) {
    fprintf(stderr, "recon_context_create: %s\n", recon_runtime_last_error());
    exit(1);
  }
  return context;
}

/* A tensor holding `data` (f32 host values, rounded to f16 when dtype is RECON_F16); NULL data: zeros. */
static inline recon_tensor* tensor_from(recon_context* context, recon_dtype dtype, uint32_t rank, const uint64_t* shape,
                                        const float* data) {
  recon_tensor* t = NULL;
  CHECK_OK(recon_tensor_create(context, dtype, rank, shape, &t));
  if (t != NULL && data != NULL) {
    CHECK_OK(recon_tensor_upload(t, RECON_F32, data, numel(rank, shape) * sizeof(float)));
  }
  return t;
}

/* The tensor's elements as f32 (malloc'd; the caller frees). */
static inline float* fetch(const recon_tensor* t) {
  uint32_t rank = 0;
  uint64_t shape[RECON_RUNTIME_MAX_RANK];
  CHECK_OK(recon_tensor_shape(t, NULL, &rank, shape));
  const size_t n = numel(rank, shape);
  float* out = calloc(n, sizeof(float));
  CHECK_OK(recon_tensor_download(t, RECON_F32, out, n * sizeof(float)));
  return out;
}

static inline const char* dtype_label(recon_dtype dtype) {
  return dtype == RECON_F16 ? "f16" : "f32";
}

#endif /* RECON_TESTS_RUNTIME_C_TEST_UTIL_H */
