"""Plain-Python reader/writer for the safetensors file format (no `safetensors` package needed).

Used by the MASt3R reference, the golden-data generator and tools/convert-checkpoint.
Layout: u64 little-endian header length N, N bytes of UTF-8 JSON
{"name": {"dtype", "shape", "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}},
then the tensor bytes. Offsets are relative to the end of the header. Tensors are written sorted by
name, contiguous, without overlap, and the header is padded with spaces to a multiple of 8 bytes
(as the official writer does) so that every tensor starts 8-byte aligned.

This module must stay dependency-light: numpy only; torch tensors are accepted if torch is present.
"""

import json
import struct

import numpy as np

# safetensors dtype name -> numpy dtype (little-endian). BF16 has no numpy type: it is carried as
# raw uint16 bits (see bf16_bits_from_f32 / f32_from_bf16_bits).
_DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_NUMPY_TO_ST = {
    np.dtype("float64"): "F64",
    np.dtype("float32"): "F32",
    np.dtype("float16"): "F16",
    np.dtype("int64"): "I64",
    np.dtype("int32"): "I32",
    np.dtype("int16"): "I16",
    np.dtype("int8"): "I8",
    np.dtype("uint64"): "U64",
    np.dtype("uint32"): "U32",
    np.dtype("uint16"): "U16",
    np.dtype("uint8"): "U8",
    np.dtype("bool"): "BOOL",
}

MAX_HEADER_BYTES = 100 * 1024 * 1024


class SafetensorsError(ValueError):
    pass


def bf16_bits_from_f32(a):
    """float32 array -> uint16 bf16 bit patterns, round-to-nearest-even (NaN kept quiet)."""
    a = np.asarray(a, dtype=np.float32, order="C")
    u = a.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        out[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return out


def f32_from_bf16_bits(bits):
    bits = np.asarray(bits, dtype=np.uint16, order="C")
    return (bits.astype(np.uint32) << 16).view(np.float32)


class BF16:
    """Marks a value for save_file as bf16: wraps uint16 bit patterns (or converts a float array)."""

    def __init__(self, values, already_bits=False):
        self.bits = np.asarray(values, dtype=np.uint16, order="C") if already_bits else bf16_bits_from_f32(values)


def _to_st_array(value):
    """Return (dtype name, numpy array with little-endian C-contiguous data)."""
    if isinstance(value, BF16):
        return "BF16", value.bits
    if hasattr(value, "detach") and hasattr(value, "dtype"):  # torch tensor, without importing torch
        t = value.detach().cpu().contiguous()
        if str(t.dtype) == "torch.bfloat16":
            import torch  # only reached when a torch tensor was given

            return "BF16", t.view(torch.int16).numpy().view(np.uint16).copy()
        value = t.numpy()
    arr = np.asarray(value)
    native = arr.dtype.newbyteorder("=") if arr.dtype.byteorder in "<>" else arr.dtype
    name = _NUMPY_TO_ST.get(native)
    if name is None:
        raise SafetensorsError(f"unsupported dtype {arr.dtype}")
    return name, np.asarray(arr, dtype=_DTYPES[name], order="C")  # ascontiguousarray would make 0-d arrays 1-d


def save_file(tensors, path, metadata=None):
    """Write `tensors` (name -> numpy array / torch tensor / BF16) to `path`.

    metadata: optional dict of str -> str, stored under "__metadata__".
    """
    if metadata is not None:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise SafetensorsError("metadata keys and values must be str")
    names = sorted(tensors)
    arrays = []
    header = {}
    offset = 0
    for name in names:
        if name == "__metadata__":
            raise SafetensorsError("'__metadata__' is reserved")
        dt, arr = _to_st_array(tensors[name])
        nbytes = arr.size * arr.itemsize
        header[name] = {"dtype": dt, "shape": [int(s) for s in arr.shape], "data_offsets": [offset, offset + nbytes]}
        arrays.append(arr)
        offset += nbytes
    if metadata:
        header["__metadata__"] = dict(metadata)
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * ((-(8 + len(hbytes))) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for arr in arrays:
            f.write(arr.tobytes(order="C"))


def read_header(path):
    """Return (header dict without __metadata__, metadata dict, data start offset, file size)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise SafetensorsError(f"{path}: file too short")
        (n,) = struct.unpack("<Q", raw)
        if n > MAX_HEADER_BYTES:
            raise SafetensorsError(f"{path}: header length {n} too large")
        hb = f.read(n)
        if len(hb) != n:
            raise SafetensorsError(f"{path}: truncated header")
        f.seek(0, 2)
        size = f.tell()
    header = json.loads(hb.decode("utf-8"))
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    data_len = size - 8 - n
    spans = []
    for name, info in header.items():
        dt = info.get("dtype")
        if dt not in _DTYPES:
            raise SafetensorsError(f"{path}: tensor {name!r} has unknown dtype {dt!r}")
        shape = info.get("shape")
        b, e = info.get("data_offsets", [None, None])
        if not isinstance(shape, list) or any((not isinstance(s, int)) or s < 0 for s in shape):
            raise SafetensorsError(f"{path}: tensor {name!r} has a bad shape {shape!r}")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not (isinstance(b, int) and isinstance(e, int) and 0 <= b <= e <= data_len):
            raise SafetensorsError(f"{path}: tensor {name!r} has bad data_offsets {[b, e]}")
        if e - b != count * _DTYPES[dt].itemsize:
            raise SafetensorsError(f"{path}: tensor {name!r} byte size {e - b} does not match {dt}{shape}")
        spans.append((b, e, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise SafetensorsError(f"{path}: tensors {n0!r} and {n1!r} overlap")
    return header, metadata, 8 + n, size


def load_file(path, bf16="float32"):
    """Read every tensor. Returns (dict name -> numpy array, metadata dict).

    bf16: "float32" converts BF16 tensors to float32 arrays; "bits" returns their raw uint16 patterns.
    """
    header, metadata, start, _ = read_header(path)
    out = {}
    with open(path, "rb") as f:
        for name, info in header.items():
            b, e = info["data_offsets"]
            f.seek(start + b)
            buf = f.read(e - b)
            arr = np.frombuffer(buf, dtype=_DTYPES[info["dtype"]]).reshape(info["shape"]).copy()
            if info["dtype"] == "BF16" and bf16 == "float32":
                arr = f32_from_bf16_bits(arr).reshape(info["shape"])
            out[name] = arr
    return out, metadata


def load_metadata(path):
    return read_header(path)[1]
