/* c_common.h: what the two C ABIs of recon share, so that one program can include both recon.h
 * (librecon, the client of recond) and runtime.h (librecon-runtime, the GPU runtime in-process):
 * the status codes, the dtypes and RECON_INIT. C11; no functions, so it belongs to neither
 * library's symbol list. Values are only ever added, never changed. */
#ifndef RECON_C_COMMON_H
#define RECON_C_COMMON_H

#ifdef __cplusplus
extern "C" {
#endif

/* Zero-fills a struct and sets its struct_size: recon_infer_options o = RECON_INIT(recon_infer_options); */
#define RECON_INIT(type) ((type){.struct_size = sizeof(type)})

typedef enum recon_status {
  RECON_OK = 0,
  RECON_INVALID_ARGUMENT = 1,
  RECON_NOT_FOUND = 2,
  RECON_PERMISSION_DENIED = 3,
  RECON_RESOURCE_EXHAUSTED = 4,
  RECON_UNAVAILABLE = 5, /* also: no daemon, no answer in time, the daemon went away */
  RECON_INTERNAL = 6,
  RECON_DATA_LOSS = 7,
  RECON_UNIMPLEMENTED = 8,
  RECON_CANCELLED = 9,
  RECON_UNKNOWN = 99
} recon_status;

typedef enum recon_dtype {
  RECON_F32 = 0,
  RECON_F16 = 1,
  RECON_BF16 = 2,
  RECON_U8 = 3,
  RECON_I32 = 4,
  RECON_U32 = 5,
  RECON_I64 = 6
} recon_dtype;

#ifdef __cplusplus
}
#endif

#endif /* RECON_C_COMMON_H */
