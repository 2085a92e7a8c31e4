"""librecon-runtime through Python's ctypes and nothing else: the C ABI is enough for an FFI
binding. Devices (recon_device_info mirrored field by field), a context, tensors filled from and
read into numpy arrays, matmul with alpha/beta/transposes against numpy, a recorded sequence
submitted twice, and an error's code and message.
    python3 ctypes_test.py LIBRECON_RUNTIME_SO        (ctest runtime_c.python_ctypes)
"""
import ctypes as C
import sys

import numpy as np

lib = C.CDLL(sys.argv[1])
OK, INVALID_ARGUMENT = 0, 1
F32 = 0
TRANSPOSE_A, TRANSPOSE_B = 1, 2


class DeviceInfo(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("index", C.c_uint32), ("type", C.c_int), ("name", C.c_char * 256),
                ("memory_bytes", C.c_uint64), ("vulkan_api_version", C.c_uint32), ("supports_f16", C.c_uint32)]


class ContextOptions(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("pipeline_cache_path", C.c_char_p), ("validation", C.c_uint32)]


P = C.c_void_p
lib.recon_runtime_last_error.restype = C.c_char_p
lib.recon_device_count.argtypes = [C.POINTER(C.c_uint32)]
lib.recon_device_describe.argtypes = [C.c_uint32, C.POINTER(DeviceInfo)]
lib.recon_context_create.argtypes = [C.c_uint32, C.POINTER(ContextOptions), C.POINTER(P)]
lib.recon_context_release.argtypes = [P]
lib.recon_tensor_create.argtypes = [P, C.c_int, C.c_uint32, C.POINTER(C.c_uint64), C.POINTER(P)]
lib.recon_tensor_release.argtypes = [P]
lib.recon_tensor_upload.argtypes = [P, C.c_int, C.c_void_p, C.c_uint64]
lib.recon_tensor_download.argtypes = [P, C.c_int, C.c_void_p, C.c_uint64]
lib.recon_matmul.argtypes = [P, P, P, P, P, C.c_float, C.c_float, C.c_uint32]
lib.recon_sequence_create.argtypes = [P, C.POINTER(P)]
lib.recon_sequence_submit.argtypes = [P]
lib.recon_sequence_wait.argtypes = [P]
lib.recon_sequence_release.argtypes = [P]


def ok(status):
    if status != OK:
        raise RuntimeError(lib.recon_runtime_last_error().decode())


count = C.c_uint32()
ok(lib.recon_device_count(C.byref(count)))
device = 0
for i in range(count.value):
    info = DeviceInfo(struct_size=C.sizeof(DeviceInfo))
    ok(lib.recon_device_describe(i, C.byref(info)))
    assert info.index == i and info.name and info.memory_bytes > 0
    if info.type == 4 and device == 0:  # RECON_DEVICE_CPU: lavapipe, as the C tests pick
        device = i
options = ContextOptions(struct_size=C.sizeof(ContextOptions), pipeline_cache_path=b"none")
ctx = P()
ok(lib.recon_context_create(device, C.byref(options), C.byref(ctx)))


def tensor(array):
    shape = (C.c_uint64 * array.ndim)(*array.shape)
    t = P()
    ok(lib.recon_tensor_create(ctx, F32, array.ndim, shape, C.byref(t)))
    array = np.ascontiguousarray(array, dtype=np.float32)
    ok(lib.recon_tensor_upload(t, F32, array.ctypes.data, array.nbytes))
    return t


def fetch(t, shape):
    out = np.empty(shape, dtype=np.float32)
    ok(lib.recon_tensor_download(t, F32, out.ctypes.data, out.nbytes))
    return out


rng = np.random.default_rng(7)
a_host = rng.uniform(-1, 1, (45, 37)).astype(np.float32)  # stored [K, M]: transposed
b_host = rng.uniform(-1, 1, (29, 45)).astype(np.float32)  # stored [N, K]: transposed
c_host = rng.uniform(-1, 1, (37, 29)).astype(np.float32)
a, b, c = tensor(a_host), tensor(b_host), tensor(c_host)
ok(lib.recon_matmul(ctx, None, a, b, c, 0.5, 2.0, TRANSPOSE_A | TRANSPOSE_B))
want = 0.5 * a_host.astype(np.float64).T @ b_host.astype(np.float64).T + 2.0 * c_host
scale = 0.5 * np.abs(a_host.T) @ np.abs(b_host.T) + 2.0 * np.abs(c_host) + 1e-6
got = fetch(c, (37, 29))
assert np.all(np.abs(got - want) <= 1e-5 * scale), np.max(np.abs(got - want) / scale)

ok(lib.recon_matmul(ctx, None, a, b, c, 1.0, 0.0, TRANSPOSE_A | TRANSPOSE_B))
once = fetch(c, (37, 29))
assert np.allclose(once, a_host.T @ b_host.T, atol=1e-4)
seq = P()
ok(lib.recon_sequence_create(ctx, C.byref(seq)))
ok(lib.recon_matmul(ctx, seq, a, b, c, 1.0, 0.0, TRANSPOSE_A | TRANSPOSE_B))
zeros = np.zeros((37, 29), dtype=np.float32)
for _ in range(2):  # each replay gives the immediate call's bits
    ok(lib.recon_tensor_upload(c, F32, zeros.ctypes.data, zeros.nbytes))
    ok(lib.recon_sequence_submit(seq))
    ok(lib.recon_sequence_wait(seq))
    assert np.array_equal(fetch(c, (37, 29)), once)

status = lib.recon_matmul(ctx, None, a, b, c, 1.0, 0.0, 0)
assert status == INVALID_ARGUMENT, status
assert b"inner dimensions differ" in lib.recon_runtime_last_error()

lib.recon_sequence_release(seq)
for t in (a, b, c):
    lib.recon_tensor_release(t)
lib.recon_context_release(ctx)
print("ctypes_test: all checks passed")
