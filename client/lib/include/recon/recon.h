/* recon.h: the C ABI of librecon, the client library of recond (C11; the same shared library as
 * the C++ API, `pkg-config --cflags --libs librecon`). Enough for a binding in any language:
 * connect, infer a pair from images in memory, match it on the daemon, read or copy its tensors,
 * release.
 *
 * Rules, as ONNX Runtime's C API keeps them: opaque handles; every call that can fail returns a
 * recon_status, and recon_last_error() then says why (per thread); releasing NULL is a no-op;
 * structs passed in start with their own size (set it with RECON_INIT), so fields can be
 * appended without breaking old callers; functions are only ever added (symbol version
 * RECON_C_1). Thread safety: a client may be used from any number of threads at once; a result
 * from one thread at a time. */
#ifndef RECON_RECON_H
#define RECON_RECON_H

#include <stddef.h>
#include <stdint.h>

/* recon_status, recon_dtype and RECON_INIT, shared with the GPU runtime's recon/runtime.h. */
#include "recon/c_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RECON_CLIENT_BUILDING)
#define RECON_C_API __attribute__((visibility("default")))
#else
#define RECON_C_API
#endif

#define RECON_C_ABI_VERSION 1
#define RECON_MAX_DIMS 8

typedef struct recon_client recon_client;
typedef struct recon_result recon_result;

/* An RGB8 image in the caller's memory: rows `stride` bytes apart (0 = width * 3). */
typedef struct recon_image {
  const uint8_t* pixels;
  uint32_t width;
  uint32_t height;
  size_t stride;
} recon_image;

typedef struct recon_infer_options {
  size_t struct_size;
  const char* model; /* NULL or "": "mast3r" */
  uint32_t height;   /* model input size; 0 and 0: the daemon decides */
  uint32_t width;
  uint32_t ttl_ms;     /* lifetime of the result handle; 0: the daemon's default */
  uint32_t timeout_ms; /* how long to wait for the answer; 0: the client's timeout */
} recon_infer_options;

typedef struct recon_match_options {
  size_t struct_size;
  uint32_t max_matches; /* 0: all (the daemon caps it) */
  uint32_t subsample;   /* 0: the official 8 */
  float min_confidence;
} recon_match_options;

typedef struct recon_tensor_info {
  const char* name; /* valid while the result lives */
  recon_dtype dtype;
  uint32_t ndim;
  uint64_t shape[RECON_MAX_DIMS];
  uint64_t bytes;
} recon_tensor_info;

RECON_C_API uint32_t recon_c_abi_version(void);
RECON_C_API const char* recon_library_version(void);
RECON_C_API const char* recon_status_name(recon_status status);
/* Why the last call on this thread that returned an error failed ("" if none did). */
RECON_C_API const char* recon_last_error(void);

/* Connects and opens a session. socket_dir NULL: $RECON_SOCKET_DIR or /run/recon; client_name
 * NULL: the program's name; timeout_ms 0: 60 s. */
RECON_C_API recon_status recon_client_connect(const char* socket_dir, const char* client_name, uint32_t timeout_ms,
                                              recon_client** out);
RECON_C_API void recon_client_release(recon_client* client);

/* One MASt3R pair: pts3d_1/2 [H,W,3], conf_1/2 [H,W], desc_1/2 [H,W,24], desc_conf_1/2 [H,W]
 * (f32). The images are copied into the client's shared memory; options may be NULL. */
RECON_C_API recon_status recon_infer_pair(recon_client* client, const recon_image* image1, const recon_image* image2,
                                          const recon_infer_options* options, recon_result** out);
/* Matches a pair result's descriptors on the daemon's GPU: matches_1/2 i32 [K,2] (x, y),
 * match_conf f32 [K], pts3d_1/2 f32 [K,3]. options may be NULL. */
RECON_C_API recon_status recon_match(recon_client* client, const recon_result* pair, const recon_match_options* options,
                                     recon_result** out);

RECON_C_API size_t recon_result_tensor_count(const recon_result* result);
RECON_C_API recon_status recon_result_tensor_info(const recon_result* result, size_t index, recon_tensor_info* info);
/* Points *data at the tensor in shared memory (fetched on first use; no copy), valid while the
 * result lives. */
RECON_C_API recon_status recon_result_view(recon_result* result, const char* name, const void** data, uint64_t* bytes);
/* Copies the tensor into the caller's buffer (RECON_RESOURCE_EXHAUSTED when capacity is short). */
RECON_C_API recon_status recon_result_fetch(recon_result* result, const char* name, void* destination,
                                            uint64_t capacity, uint64_t* written);
/* Releases the handle on the daemon and frees the result. */
RECON_C_API void recon_result_release(recon_result* result);

#ifdef __cplusplus
}
#endif

#endif /* RECON_RECON_H */
