/* runtime.h: the C ABI of librecon-runtime, recon's GPU runtime in-process (C11; its own shared
 * library, `pkg-config --cflags --libs librecon-runtime`). Devices, tensors in device memory, the
 * op library (matmul, add, mul, linear, conv2d, softmax, layer norm) run at once or recorded into
 * a sequence that is submitted many times. Enough for a binding in any language.
 *
 * Why a library of its own: librecon (recon.h), the client of recond, must not load a Vulkan
 * driver; this one does. The two share recon/c_common.h (recon_status, recon_dtype, RECON_INIT),
 * so a program may include and link both; each has its own last-error and status-name calls.
 *
 * Rules, as ONNX Runtime's C API keeps them (and recon.h): opaque handles; every call that can
 * fail returns a recon_status, and recon_runtime_last_error() then says why (per thread); every
 * misuse (NULL, wrong shape or dtype, a tensor of another context, a sequence submitted while in
 * flight) is RECON_INVALID_ARGUMENT with a message naming it, never a crash; releasing NULL is a
 * no-op; structs passed in start with their own size (set it with RECON_INIT), so fields can be
 * appended without breaking old callers; functions are only ever added (symbol version
 * RECON_RUNTIME_1, every other symbol hidden).
 *
 * Lifetimes: tensors and sequences keep their context alive, and a sequence keeps the device
 * memory of the tensors it recorded, so handles may be released in any order.
 * Threads: calls on the objects of one context are serialised by that context (a call that
 * waits for the GPU holds the others back); different contexts run independently. */
#ifndef RECON_RUNTIME_H
#define RECON_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "recon/c_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RECON_RUNTIME_BUILDING)
#define RECON_RUNTIME_API __attribute__((visibility("default")))
#else
#define RECON_RUNTIME_API
#endif

#define RECON_RUNTIME_ABI_VERSION 1
#define RECON_RUNTIME_MAX_RANK 4

typedef struct recon_context recon_context;
typedef struct recon_tensor recon_tensor;
typedef struct recon_sequence recon_sequence;

/* Vulkan's VkPhysicalDeviceType values. */
typedef enum recon_device_type {
  RECON_DEVICE_OTHER = 0,
  RECON_DEVICE_INTEGRATED_GPU = 1,
  RECON_DEVICE_DISCRETE_GPU = 2,
  RECON_DEVICE_VIRTUAL_GPU = 3,
  RECON_DEVICE_CPU = 4 /* e.g. Mesa's lavapipe */
} recon_device_type;

typedef struct recon_device_info {
  size_t struct_size; /* set by the caller (RECON_INIT); only that many bytes are written */
  uint32_t index;     /* what recon_context_create takes (the Vulkan enumeration order) */
  recon_device_type type;
  char name[256];
  uint64_t memory_bytes;       /* device-local heaps, summed */
  uint32_t vulkan_api_version; /* VK_MAKE_API_VERSION form */
  uint32_t supports_f16;       /* 1: RECON_F16 tensors work (16-bit storage buffers) */
} recon_device_info;

typedef struct recon_context_options {
  size_t struct_size;
  /* Pipeline cache file; NULL or "": $RECON_CACHE_DIR, $XDG_CACHE_HOME/recon or ~/.cache/recon;
   * "none": no file. */
  const char* pipeline_cache_path;
  /* 1: the Khronos validation layer (also RECON_VALIDATION=1); its errors are logged to stderr. */
  uint32_t validation;
} recon_context_options;

/* Fused after the bias; values are the op library's. */
typedef enum recon_activation {
  RECON_ACTIVATION_NONE = 0,
  RECON_ACTIVATION_RELU = 1,
  RECON_ACTIVATION_GELU = 2,      /* 0.5·x·(1 + erf(x/√2)), PyTorch's nn.GELU() */
  RECON_ACTIVATION_GELU_TANH = 3, /* nn.GELU(approximate='tanh') */
  RECON_ACTIVATION_SIGMOID = 4,
  RECON_ACTIVATION_TANH = 5
} recon_activation;

/* recon_matmul's flags. */
#define RECON_TRANSPOSE_A 1u /* A stored [K, M] */
#define RECON_TRANSPOSE_B 2u /* B stored [N, K] (nn.Linear weights) */

typedef struct recon_conv2d_desc {
  size_t struct_size;
  uint32_t stride_h, stride_w;     /* 0 means 1 */
  uint32_t pad_h, pad_w;           /* zero padding on both sides */
  uint32_t dilation_h, dilation_w; /* 0 means 1; above 1: RECON_UNIMPLEMENTED (not in the op library) */
  recon_activation activation;
} recon_conv2d_desc;

/* ---- library ---------------------------------------------------------------------------------- */
RECON_RUNTIME_API uint32_t recon_runtime_abi_version(void);
RECON_RUNTIME_API const char* recon_runtime_version(void);
RECON_RUNTIME_API const char* recon_runtime_status_name(recon_status status);
/* Why the last call into this library on this thread that returned an error failed ("" if none did). */
RECON_RUNTIME_API const char* recon_runtime_last_error(void);

/* ---- devices and contexts --------------------------------------------------------------------- */
/* The Vulkan devices present (read once per process). */
RECON_RUNTIME_API recon_status recon_device_count(uint32_t* count);
RECON_RUNTIME_API recon_status recon_device_describe(uint32_t index, recon_device_info* info);
/* Opens device `device_index`: its queues, buffer pools and pipeline cache. options may be NULL. */
RECON_RUNTIME_API recon_status recon_context_create(uint32_t device_index, const recon_context_options* options,
                                                    recon_context** out);
RECON_RUNTIME_API void recon_context_release(recon_context* context);

/* ---- tensors ---------------------------------------------------------------------------------- */
/* A dense, row-major tensor in device memory, zero-filled: dtype RECON_F32 or RECON_F16 (the
 * latter where supports_f16), rank 1 to RECON_RUNTIME_MAX_RANK, every dimension at least 1. */
RECON_RUNTIME_API recon_status recon_tensor_create(recon_context* context, recon_dtype dtype, uint32_t rank,
                                                   const uint64_t* shape, recon_tensor** out);
RECON_RUNTIME_API void recon_tensor_release(recon_tensor* tensor);
/* dtype, rank and shape (shape has room for RECON_RUNTIME_MAX_RANK; any pointer may be NULL). */
RECON_RUNTIME_API recon_status recon_tensor_shape(const recon_tensor* tensor, recon_dtype* dtype, uint32_t* rank,
                                                  uint64_t* shape);
/* Copies from / to the caller's memory, which holds the elements as `host_dtype` (RECON_F32 or
 * RECON_F16); `bytes` must be exactly the element count times its size. Where host_dtype differs
 * from the tensor's, the elements are converted on the host: f32 → f16 rounds to nearest even
 * (beyond ±65504: ±inf), f16 → f32 is exact. Refused while a submitted sequence that uses the
 * tensor has not been waited for. */
RECON_RUNTIME_API recon_status recon_tensor_upload(recon_tensor* tensor, recon_dtype host_dtype, const void* data,
                                                   uint64_t bytes);
RECON_RUNTIME_API recon_status recon_tensor_download(const recon_tensor* tensor, recon_dtype host_dtype, void* data,
                                                     uint64_t bytes);

/* ---- sequences: record once, submit many ------------------------------------------------------ */
/* An empty sequence. Ops given it are recorded (checked, not run); the first submit seals it (it
 * records nothing more) and every submit replays the same GPU work on the tensors' current
 * contents. */
RECON_RUNTIME_API recon_status recon_sequence_create(recon_context* context, recon_sequence** out);
/* Starts a run and returns; the sequence is then in flight until recon_sequence_wait. Submitting
 * it again before that, or an empty sequence, is RECON_INVALID_ARGUMENT; other sequences may be
 * submitted meanwhile (they run in submission order). */
RECON_RUNTIME_API recon_status recon_sequence_submit(recon_sequence* sequence);
/* Blocks until the last submission finished (RECON_OK at once when none is in flight). */
RECON_RUNTIME_API recon_status recon_sequence_wait(recon_sequence* sequence);
/* Ops recorded so far. */
RECON_RUNTIME_API recon_status recon_sequence_op_count(const recon_sequence* sequence, uint32_t* count);
/* Waits for a run in flight, then frees the sequence. */
RECON_RUNTIME_API void recon_sequence_release(recon_sequence* sequence);

/* ---- ops ---------------------------------------------------------------------------------------
 * Every op takes its context and a sequence: NULL runs it now (dispatch, wait, return; the work
 * for the same operands is recorded once and replayed on later calls), else the op is recorded
 * into that sequence. All tensors must belong to the context and share one dtype (f32 or f16;
 * arithmetic is fp32); an output must not be an input unless the op says so. Accuracy: the op
 * library's, docs/GPU_RUNTIME.md "The C API". */

/* C = alpha·op(A)·op(B) + beta·C, op() transposing per flags (RECON_TRANSPOSE_A/B). A [M,K] or
 * [batch,M,K] ([K,M] with TRANSPOSE_A), B [K,N] or [batch,K,N] ([N,K] with TRANSPOSE_B), C [M,N]
 * or [batch,M,N]; a 2-D A or B is broadcast over C's batch. beta = 0: C is only written. */
RECON_RUNTIME_API recon_status recon_matmul(recon_context* context, recon_sequence* sequence, const recon_tensor* a,
                                            const recon_tensor* b, recon_tensor* c, float alpha, float beta,
                                            uint32_t flags);
/* out = a + b, out = a · b, elementwise with NumPy broadcasting (out has the broadcast shape; it
 * may be a or b where that has out's shape). */
RECON_RUNTIME_API recon_status recon_add(recon_context* context, recon_sequence* sequence, const recon_tensor* a,
                                         const recon_tensor* b, recon_tensor* out);
RECON_RUNTIME_API recon_status recon_mul(recon_context* context, recon_sequence* sequence, const recon_tensor* a,
                                         const recon_tensor* b, recon_tensor* out);
/* nn.Linear: output[..., N] = act(input[..., K] · weight[N, K]ᵀ + bias[N]); bias may be NULL. */
RECON_RUNTIME_API recon_status recon_linear(recon_context* context, recon_sequence* sequence, const recon_tensor* input,
                                            const recon_tensor* weight, const recon_tensor* bias, recon_tensor* output,
                                            recon_activation activation);
/* nn.Conv2d (groups 1): input [B, Cin, H, W], weight [Cout, Cin, KH, KW], bias [Cout] or NULL,
 * output [B, Cout, (H + 2·pad_h − KH)/stride_h + 1, (W + 2·pad_w − KW)/stride_w + 1]. */
RECON_RUNTIME_API recon_status recon_conv2d(recon_context* context, recon_sequence* sequence,
                                            const recon_conv2d_desc* desc, const recon_tensor* input,
                                            const recon_tensor* weight, const recon_tensor* bias, recon_tensor* output);
/* Softmax over the last axis; out shaped like x, not x itself. */
RECON_RUNTIME_API recon_status recon_softmax(recon_context* context, recon_sequence* sequence, const recon_tensor* x,
                                             recon_tensor* out);
/* out = (x − mean) / sqrt(var + eps) · weight + bias over the last axis (C); weight and bias are
 * [C] or NULL; out shaped like x, not x itself. */
RECON_RUNTIME_API recon_status recon_layer_norm(recon_context* context, recon_sequence* sequence, const recon_tensor* x,
                                                const recon_tensor* weight, const recon_tensor* bias, recon_tensor* out,
                                                float eps);

#ifdef __cplusplus
}
#endif

#endif /* RECON_RUNTIME_H */
