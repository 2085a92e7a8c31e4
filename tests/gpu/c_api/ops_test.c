/* Every op of recon/runtime.h run at once, in f32 and f16, against a straightforward CPU
 * reference computed here in double from the values the device holds (downloaded back, so f16
 * inputs are compared as rounded); plus device enumeration and the f32 ↔ f16 conversions of
 * upload and download; and calls on one context from two threads at once. Tolerances are the op library's
 * (docs/GPU_RUNTIME.md "The C API"): a GEMM (matmul, linear, conv2d) within tol·(Σ|products| + |bias| + |beta·c|) with
 * tol 1e-5 (f32) or 2e-3 (f16); softmax within 1e-5 / 2e-3 of max(|ref|, 1e-3); layer norm 1e-5 / 4e-3 of max(|ref|,
 * 1); add and mul 1e-6 / 1e-3 relative. ops_test                 (RECON_TEST_DEVICE=N picks the device; default:
 * lavapipe) */
#include <threads.h>

#include "test_util.h"

static double gemm_tol(recon_dtype dtype) {
  return dtype == RECON_F16 ? 2e-3 : 1e-5;
}

/* |got - want| <= tol * scale, reported once per call with the worst element. */
static void expect_close(const char* what, const float* got, const double* want, const double* scale, size_t n,
                         double tol) {
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const double err = fabs((double)got[i] - want[i]) / scale[i];
    if (!(err <= worst)) {
      worst = err;
      at = i;
    }
  }
  if (!(worst <= tol)) {
    fprintf(stderr, "%s: element %zu is %.9g, reference %.9g (error %.3g of scale, tolerance %.3g)\n", what, at,
            (double)got[at], want[at], worst, tol);
    ++failures;
  }
}

static void test_devices(void) {
  uint32_t count = 0;
  CHECK_OK(recon_device_count(&count));
  CHECK(count >= 1);
  for (uint32_t i = 0; i < count; ++i) {
    recon_device_info info = RECON_INIT(recon_device_info);
    CHECK_OK(recon_device_describe(i, &info));
    CHECK(info.index == i);
    CHECK(info.name[0] != '\0');
    CHECK(info.memory_bytes > 0);
    CHECK(info.vulkan_api_version >= (1u << 22 | 3u << 12)); /* 1.3 */
    printf("device %u: %s, type %d, %.1f GiB, f16 %u\n", i, info.name, (int)info.type,
           (double)info.memory_bytes / (1 << 30), info.supports_f16);
  }
  /* An older caller's smaller struct gets only what it knows of. */
  struct {
    size_t struct_size;
    uint32_t index;
  } old = {sizeof(old), 77};
  CHECK_OK(recon_device_describe(0, (recon_device_info*)&old));
  CHECK(old.index == 0 && old.struct_size == sizeof(old));
}

static void test_conversions(recon_context* ctx) {
  const uint64_t shape[] = {5};
  const float in[5] = {1.0f / 3.0f, -2.5f, 70000.0f, 6.1e-5f, 0.0f};
  recon_tensor* h = tensor_from(ctx, RECON_F16, 1, shape, in);
  float out[5];
  CHECK_OK(recon_tensor_download(h, RECON_F32, out, sizeof(out)));
  CHECK(out[0] == 0.333251953125f); /* nearest f16 */
  CHECK(out[1] == -2.5f);
  CHECK(isinf(out[2]) && out[2] > 0); /* beyond 65504 */
  CHECK(fabsf(out[3] - 6.1e-5f) < 1e-7f);
  CHECK(out[4] == 0.0f);
  /* f16 bits in, f16 bits out, unchanged; through an f32 tensor exactly too. */
  const uint16_t bits[5] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000}; /* 1, -2, 65504, smallest subnormal, -0 */
  recon_tensor* f = NULL;
  CHECK_OK(recon_tensor_create(ctx, RECON_F32, 1, shape, &f));
  CHECK_OK(recon_tensor_upload(f, RECON_F16, bits, sizeof(bits)));
  CHECK_OK(recon_tensor_download(f, RECON_F32, out, sizeof(out)));
  CHECK(out[0] == 1.0f && out[1] == -2.0f && out[2] == 65504.0f && out[3] == ldexpf(1.0f, -24));
  uint16_t back[5];
  CHECK_OK(recon_tensor_download(f, RECON_F16, back, sizeof(back)));
  CHECK(memcmp(back, bits, sizeof(bits)) == 0);
  CHECK_OK(recon_tensor_upload(h, RECON_F16, bits, sizeof(bits)));
  CHECK_OK(recon_tensor_download(h, RECON_F16, back, sizeof(back)));
  CHECK(memcmp(back, bits, sizeof(bits)) == 0);
  /* New tensors read as zeros. */
  recon_tensor* z = NULL;
  const uint64_t zshape[] = {3, 7};
  CHECK_OK(recon_tensor_create(ctx, RECON_F16, 2, zshape, &z));
  float* zeros = fetch(z);
  for (int i = 0; i < 21; ++i) CHECK(zeros[i] == 0.0f);
  free(zeros);
  recon_dtype dtype;
  uint32_t rank;
  uint64_t got[RECON_RUNTIME_MAX_RANK];
  CHECK_OK(recon_tensor_shape(z, &dtype, &rank, got));
  CHECK(dtype == RECON_F16 && rank == 2 && got[0] == 3 && got[1] == 7);
  recon_tensor_release(z);
  recon_tensor_release(f);
  recon_tensor_release(h);
}

/* C = alpha·op(A)·op(B) + beta·C over a batch of 3 (A batched, B broadcast), every transpose. */
static void test_matmul(recon_context* ctx, recon_dtype dtype) {
  enum { BATCH = 3, M = 37, N = 29, K = 45 };
  const float alpha = 0.75f, beta = -0.5f;
  for (uint32_t flags = 0; flags < 4; ++flags) {
    const int ta = (flags & RECON_TRANSPOSE_A) != 0, tb = (flags & RECON_TRANSPOSE_B) != 0;
    const uint64_t ashape[] = {BATCH, ta ? K : M, ta ? M : K}, bshape[] = {tb ? N : K, tb ? K : N};
    const uint64_t cshape[] = {BATCH, M, N};
    float* ha = random_floats(BATCH * M * K, -1, 1);
    float* hb = random_floats(K * N, -1, 1);
    float* hc = random_floats(BATCH * M * N, -1, 1);
    recon_tensor* a = tensor_from(ctx, dtype, 3, ashape, ha);
    recon_tensor* b = tensor_from(ctx, dtype, 2, bshape, hb);
    recon_tensor* c = tensor_from(ctx, dtype, 3, cshape, hc);
    float* a0 = fetch(a);
    float* b0 = fetch(b);
    float* c0 = fetch(c);
    CHECK_OK(recon_matmul(ctx, NULL, a, b, c, alpha, beta, flags));
    float* got = fetch(c);
    double* want = malloc(sizeof(double) * BATCH * M * N);
    double* scale = malloc(sizeof(double) * BATCH * M * N);
    for (int z = 0; z < BATCH; ++z) {
      for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
          double sum = 0, abs_sum = 0;
          for (int k = 0; k < K; ++k) {
            const double x = a0[z * M * K + (ta ? k * M + i : i * K + k)];
            const double y = b0[tb ? j * K + k : k * N + j];
            sum += x * y;
            abs_sum += fabs(x * y);
          }
          const size_t o = (size_t)(z * M + i) * N + j;
          want[o] = alpha * sum + beta * (double)c0[o];
          scale[o] = fabs(alpha) * abs_sum + fabs(beta * (double)c0[o]) + 1e-6;
        }
      }
    }
    char what[64];
    snprintf(what, sizeof(what), "matmul %s flags %u", dtype_label(dtype), flags);
    expect_close(what, got, want, scale, BATCH * M * N, gemm_tol(dtype));
    free(ha), free(hb), free(hc), free(a0), free(b0), free(c0), free(got), free(want), free(scale);
    recon_tensor_release(a), recon_tensor_release(b), recon_tensor_release(c);
  }
}

/* add and mul: equal shapes, a broadcast bias [C] over [2,3,C], and in place (out = a). */
static void test_add_mul(recon_context* ctx, recon_dtype dtype) {
  enum { C = 13, N = 2 * 3 * C };
  const uint64_t full[] = {2, 3, C}, row[] = {C};
  float* hx = random_floats(N, -4, 4);
  float* hy = random_floats(N, -4, 4);
  float* hr = random_floats(C, -4, 4);
  recon_tensor* x = tensor_from(ctx, dtype, 3, full, hx);
  recon_tensor* y = tensor_from(ctx, dtype, 3, full, hy);
  recon_tensor* r = tensor_from(ctx, dtype, 1, row, hr);
  recon_tensor* out = tensor_from(ctx, dtype, 3, full, NULL);
  float* x0 = fetch(x);
  float* y0 = fetch(y);
  float* r0 = fetch(r);
  double want[N], scale[N];
  const double tol = dtype == RECON_F16 ? 1e-3 : 1e-6;
  for (int op = 0; op < 4; ++op) {
    const int mul = op & 1, broadcast = op >> 1;
    const recon_tensor* b = broadcast ? r : y;
    CHECK_OK((mul ? recon_mul : recon_add)(ctx, NULL, x, b, out));
    float* got = fetch(out);
    for (int i = 0; i < N; ++i) {
      const double u = x0[i], v = broadcast ? r0[i % C] : y0[i];
      want[i] = mul ? u * v : u + v;
      scale[i] = mul ? fabs(u * v) + 1e-30 : fabs(u) + fabs(v) + 1e-30;
    }
    char what[64];
    snprintf(what, sizeof(what), "%s %s%s", mul ? "mul" : "add", dtype_label(dtype), broadcast ? " broadcast" : "");
    expect_close(what, got, want, scale, N, tol);
    free(got);
  }
  /* In place: x = x + y. */
  CHECK_OK(recon_add(ctx, NULL, x, y, x));
  float* got = fetch(x);
  for (int i = 0; i < N; ++i) {
    want[i] = (double)x0[i] + y0[i];
    scale[i] = fabs((double)x0[i]) + fabs((double)y0[i]) + 1e-30;
  }
  expect_close("add in place", got, want, scale, N, tol);
  free(got), free(hx), free(hy), free(hr), free(x0), free(y0), free(r0);
  recon_tensor_release(x), recon_tensor_release(y), recon_tensor_release(r), recon_tensor_release(out);
}

static double activate(double x, recon_activation act) {
  switch (act) {
    case RECON_ACTIVATION_RELU:
      return x > 0 ? x : 0;
    case RECON_ACTIVATION_GELU:
      return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case RECON_ACTIVATION_GELU_TANH:
      return 0.5 * x * (1 + tanh(sqrt(2.0 / 3.141592653589793) * (x + 0.044715 * x * x * x)));
    case RECON_ACTIVATION_SIGMOID:
      return 1 / (1 + exp(-x));
    case RECON_ACTIVATION_TANH:
      return tanh(x);
    default:
      return x;
  }
}

/* nn.Linear over [2,7,K] tokens, with and without bias, each activation. */
static void test_linear(recon_context* ctx, recon_dtype dtype) {
  enum { ROWS = 14, K = 33, N = 19 };
  const uint64_t xshape[] = {2, 7, K}, wshape[] = {N, K}, bshape[] = {N}, oshape[] = {2, 7, N};
  float* hx = random_floats(ROWS * K, -1, 1);
  float* hw = random_floats(N * K, -1, 1);
  float* hb = random_floats(N, -1, 1);
  recon_tensor* x = tensor_from(ctx, dtype, 3, xshape, hx);
  recon_tensor* w = tensor_from(ctx, dtype, 2, wshape, hw);
  recon_tensor* b = tensor_from(ctx, dtype, 1, bshape, hb);
  recon_tensor* out = tensor_from(ctx, dtype, 3, oshape, NULL);
  float* x0 = fetch(x);
  float* w0 = fetch(w);
  float* b0 = fetch(b);
  for (int act = RECON_ACTIVATION_NONE; act <= RECON_ACTIVATION_TANH; ++act) {
    const int with_bias = act % 2 == 0;
    CHECK_OK(recon_linear(ctx, NULL, x, w, with_bias ? b : NULL, out, (recon_activation)act));
    float* got = fetch(out);
    double want[ROWS * N], scale[ROWS * N];
    for (int r = 0; r < ROWS; ++r) {
      for (int n = 0; n < N; ++n) {
        double sum = with_bias ? b0[n] : 0, abs_sum = with_bias ? fabs((double)b0[n]) : 0;
        for (int k = 0; k < K; ++k) {
          sum += (double)x0[r * K + k] * w0[n * K + k];
          abs_sum += fabs((double)x0[r * K + k] * w0[n * K + k]);
        }
        want[r * N + n] = activate(sum, (recon_activation)act);
        scale[r * N + n] = abs_sum + 1e-6;
      }
    }
    char what[64];
    snprintf(what, sizeof(what), "linear %s activation %d%s", dtype_label(dtype), act, with_bias ? " bias" : "");
    expect_close(what, got, want, scale, ROWS * N, gemm_tol(dtype));
    free(got);
  }
  free(hx), free(hw), free(hb), free(x0), free(w0), free(b0);
  recon_tensor_release(x), recon_tensor_release(w), recon_tensor_release(b), recon_tensor_release(out);
}

/* nn.Conv2d with stride (2, 1), padding (1, 2), bias and ReLU; then 1x1 without bias. */
static void test_conv2d(recon_context* ctx, recon_dtype dtype) {
  enum { B = 2, CIN = 3, H = 9, W = 11, COUT = 5 };
  for (int variant = 0; variant < 2; ++variant) {
    const int kh = variant == 0 ? 3 : 1, kw = kh, sh = variant == 0 ? 2 : 1, sw = 1;
    const int ph = variant == 0 ? 1 : 0, pw = variant == 0 ? 2 : 0;
    const int ho = (H + 2 * ph - kh) / sh + 1, wo = (W + 2 * pw - kw) / sw + 1;
    const uint64_t ishape[] = {B, CIN, H, W}, wshape[] = {COUT, CIN, kh, kw}, bshape[] = {COUT};
    const uint64_t oshape[] = {B, COUT, ho, wo};
    float* hi = random_floats(B * CIN * H * W, -1, 1);
    float* hw = random_floats(COUT * CIN * kh * kw, -1, 1);
    float* hb = random_floats(COUT, -1, 1);
    recon_tensor* in = tensor_from(ctx, dtype, 4, ishape, hi);
    recon_tensor* w = tensor_from(ctx, dtype, 4, wshape, hw);
    recon_tensor* bias = variant == 0 ? tensor_from(ctx, dtype, 1, bshape, hb) : NULL;
    recon_tensor* out = tensor_from(ctx, dtype, 4, oshape, NULL);
    float* i0 = fetch(in);
    float* w0 = fetch(w);
    float* b0 = bias != NULL ? fetch(bias) : NULL;
    recon_conv2d_desc desc = RECON_INIT(recon_conv2d_desc);
    desc.stride_h = (uint32_t)sh;
    desc.stride_w = variant == 0 ? (uint32_t)sw : 0; /* 0 means 1 */
    desc.pad_h = (uint32_t)ph;
    desc.pad_w = (uint32_t)pw;
    desc.activation = variant == 0 ? RECON_ACTIVATION_RELU : RECON_ACTIVATION_NONE;
    CHECK_OK(recon_conv2d(ctx, NULL, &desc, in, w, bias, out));
    float* got = fetch(out);
    const size_t n = (size_t)B * COUT * ho * wo;
    double* want = malloc(n * sizeof(double));
    double* scale = malloc(n * sizeof(double));
    for (int b = 0; b < B; ++b) {
      for (int o = 0; o < COUT; ++o) {
        for (int y = 0; y < ho; ++y) {
          for (int x = 0; x < wo; ++x) {
            double sum = b0 ? b0[o] : 0, abs_sum = b0 ? fabs((double)b0[o]) : 0;
            for (int c = 0; c < CIN; ++c) {
              for (int i = 0; i < kh; ++i) {
                for (int j = 0; j < kw; ++j) {
                  const int yy = y * sh - ph + i, xx = x * sw - pw + j;
                  if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                  const double p =
                      (double)w0[((o * CIN + c) * kh + i) * kw + j] * i0[((b * CIN + c) * H + yy) * W + xx];
                  sum += p;
                  abs_sum += fabs(p);
                }
              }
            }
            const size_t at = (((size_t)b * COUT + o) * ho + y) * wo + x;
            want[at] = activate(sum, desc.activation);
            scale[at] = abs_sum + 1e-6;
          }
        }
      }
    }
    char what[64];
    snprintf(what, sizeof(what), "conv2d %s %dx%d", dtype_label(dtype), kh, kw);
    expect_close(what, got, want, scale, n, gemm_tol(dtype));
    free(hi), free(hw), free(hb), free(i0), free(w0), free(b0), free(got), free(want), free(scale);
    recon_tensor_release(in), recon_tensor_release(w), recon_tensor_release(bias), recon_tensor_release(out);
  }
}

static void test_softmax_layer_norm(recon_context* ctx, recon_dtype dtype) {
  enum { ROWS = 6, C = 40, N = ROWS * C };
  const uint64_t shape[] = {2, 3, C}, cshape[] = {C};
  float* hx = random_floats(N, -8, 8);
  for (int i = 0; i < C; ++i) hx[i] += 3.0f; /* one row with an offset */
  float* hw = random_floats(C, 0.5f, 1.5f);
  float* hb = random_floats(C, -1, 1);
  recon_tensor* x = tensor_from(ctx, dtype, 3, shape, hx);
  recon_tensor* w = tensor_from(ctx, dtype, 1, cshape, hw);
  recon_tensor* b = tensor_from(ctx, dtype, 1, cshape, hb);
  recon_tensor* out = tensor_from(ctx, dtype, 3, shape, NULL);
  float* x0 = fetch(x);
  float* w0 = fetch(w);
  float* b0 = fetch(b);
  double want[N], scale[N];

  CHECK_OK(recon_softmax(ctx, NULL, x, out));
  float* got = fetch(out);
  for (int r = 0; r < ROWS; ++r) {
    double m = -INFINITY, s = 0;
    for (int i = 0; i < C; ++i) m = fmax(m, x0[r * C + i]);
    for (int i = 0; i < C; ++i) s += exp(x0[r * C + i] - m);
    for (int i = 0; i < C; ++i) {
      want[r * C + i] = exp(x0[r * C + i] - m) / s;
      scale[r * C + i] = fmax(want[r * C + i], 1e-3);
    }
  }
  expect_close(dtype == RECON_F16 ? "softmax f16" : "softmax f32", got, want, scale, N,
               dtype == RECON_F16 ? 2e-3 : 1e-5);
  free(got);

  for (int affine = 0; affine < 2; ++affine) {
    const float eps = 1e-5f;
    CHECK_OK(recon_layer_norm(ctx, NULL, x, affine ? w : NULL, affine ? b : NULL, out, eps));
    got = fetch(out);
    for (int r = 0; r < ROWS; ++r) {
      double mean = 0, var = 0;
      for (int i = 0; i < C; ++i) mean += x0[r * C + i];
      mean /= C;
      for (int i = 0; i < C; ++i) var += (x0[r * C + i] - mean) * (x0[r * C + i] - mean);
      var /= C;
      for (int i = 0; i < C; ++i) {
        double v = (x0[r * C + i] - mean) / sqrt(var + eps);
        if (affine) v = v * w0[i] + b0[i];
        want[r * C + i] = v;
        scale[r * C + i] = fmax(fabs(v), 1.0);
      }
    }
    expect_close(affine ? "layer_norm affine" : "layer_norm", got, want, scale, N, dtype == RECON_F16 ? 4e-3 : 1e-5);
    free(got);
  }
  free(hx), free(hw), free(hb), free(x0), free(w0), free(b0);
  recon_tensor_release(x), recon_tensor_release(w), recon_tensor_release(b), recon_tensor_release(out);
}

/* Two threads, one context: each uploads, adds and downloads its own tensors 20 times. */
typedef struct thread_job {
  recon_context* ctx;
  uint32_t seed;
  int wrong;
} thread_job;

static int add_loop(void* arg) {
  thread_job* job = arg;
  enum { N = 4096 };
  const uint64_t shape[] = {64, 64};
  recon_tensor *a = NULL, *b = NULL, *out = NULL;
  if (recon_tensor_create(job->ctx, RECON_F32, 2, shape, &a) != RECON_OK ||
      recon_tensor_create(job->ctx, RECON_F32, 2, shape, &b) != RECON_OK ||
      recon_tensor_create(job->ctx, RECON_F32, 2, shape, &out) != RECON_OK) {
    job->wrong = -1;
    return 0;
  }
  static float x[2][N], y[2][N], got[2][N];
  float *hx = x[job->seed & 1], *hy = y[job->seed & 1], *hg = got[job->seed & 1];
  uint32_t state = job->seed;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < N; ++i) {
      state = state * 1664525u + 1013904223u;
      hx[i] = (float)(state >> 8) / 65536.0f;
      hy[i] = (float)round - (float)i;
    }
    if (recon_tensor_upload(a, RECON_F32, hx, sizeof(float) * N) != RECON_OK ||
        recon_tensor_upload(b, RECON_F32, hy, sizeof(float) * N) != RECON_OK ||
        recon_add(job->ctx, NULL, a, b, out) != RECON_OK ||
        recon_tensor_download(out, RECON_F32, hg, sizeof(float) * N) != RECON_OK) {
      job->wrong = -1;
      break;
    }
    for (int i = 0; i < N; ++i) job->wrong += hg[i] != hx[i] + hy[i];
  }
  recon_tensor_release(a), recon_tensor_release(b), recon_tensor_release(out);
  return 0;
}

static void test_threads(recon_context* ctx) {
  thread_job jobs[2] = {{ctx, 1, 0}, {ctx, 2, 0}};
  thrd_t threads[2];
  for (int i = 0; i < 2; ++i) CHECK(thrd_create(&threads[i], add_loop, &jobs[i]) == thrd_success);
  for (int i = 0; i < 2; ++i) CHECK(thrd_join(threads[i], NULL) == thrd_success);
  CHECK(jobs[0].wrong == 0 && jobs[1].wrong == 0);
}

int main(void) {
  test_devices();
  recon_context* ctx = open_context();
  recon_device_info info = RECON_INIT(recon_device_info);
  CHECK_OK(recon_device_describe(test_device(), &info));
  if (info.supports_f16) test_conversions(ctx);
  const recon_dtype dtypes[] = {RECON_F32, RECON_F16};
  for (int d = 0; d < 2; ++d) {
    if (dtypes[d] == RECON_F16 && !info.supports_f16) {
      printf("skipping f16: %s has no 16-bit storage\n", info.name);
      continue;
    }
    test_matmul(ctx, dtypes[d]);
    test_add_mul(ctx, dtypes[d]);
    test_linear(ctx, dtypes[d]);
    test_conv2d(ctx, dtypes[d]);
    test_softmax_layer_norm(ctx, dtypes[d]);
  }
  test_threads(ctx);
  recon_context_release(ctx);
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("ops_test: all checks passed\n");
  return 0;
}
