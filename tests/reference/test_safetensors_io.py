"""Tests of the plain-Python safetensors reader/writer."""

import json
import os
import struct
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import safetensors_io as st  # noqa: E402


class SafetensorsRoundTrip(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "t.safetensors")

    def tearDown(self):
        self.dir.cleanup()

    def test_round_trip_dtypes_metadata_and_layout(self):
        rs = np.random.RandomState(0)
        tensors = {
            "b.f32": rs.randn(3, 4).astype(np.float32),
            "a.f16": rs.randn(5).astype(np.float16),
            "c.f64": rs.randn(2, 2, 2),
            "d.i32": np.arange(7, dtype=np.int32),
            "e.u8": rs.randint(0, 255, (4, 3, 3)).astype(np.uint8),
            "f.i64": np.array([-1, 2**40], dtype=np.int64),
            "g.scalar": np.array(1.5, dtype=np.float32),
            "h.empty": np.zeros((0, 3), dtype=np.float32),
            "i.torch": torch.arange(6, dtype=torch.float32).reshape(2, 3),
        }
        meta = {"mast3r.config": json.dumps({"x": ["exp", "-inf", "inf"]}), "k": "v"}
        st.save_file(tensors, self.path, metadata=meta)
        out, m = st.load_file(self.path)
        self.assertEqual(m, meta)
        self.assertEqual(set(out), set(tensors))
        for k, v in tensors.items():
            v = v.numpy() if isinstance(v, torch.Tensor) else v
            self.assertEqual(out[k].dtype, v.dtype, k)
            self.assertEqual(out[k].shape, v.shape, k)
            np.testing.assert_array_equal(out[k], v)
        # header: u64 LE length, multiple-of-8 data start, tensors sorted by name and packed without gaps
        with open(self.path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        self.assertEqual((8 + n) % 8, 0)
        names = [k for k in header if k != "__metadata__"]
        spans = sorted((header[k]["data_offsets"], k) for k in names)
        self.assertEqual([k for _, k in spans], sorted(names))
        end = 0
        for (b, e), k in spans:
            self.assertEqual(b, end, k)
            end = e
        self.assertEqual(os.path.getsize(self.path), 8 + n + end)
        self.assertEqual(header["b.f32"], {"dtype": "F32", "shape": [3, 4], "data_offsets": header["b.f32"]["data_offsets"]})

    def test_bf16(self):
        x = np.array([1.0, -2.5, 3.1415926, 1e-3, 65504.0, np.inf], dtype=np.float32)
        st.save_file({"x": st.BF16(x), "t": torch.tensor(x).to(torch.bfloat16)}, self.path)
        out, _ = st.load_file(self.path)
        ref = torch.tensor(x).to(torch.bfloat16).to(torch.float32).numpy()
        np.testing.assert_array_equal(out["x"], ref)  # numpy RNE conversion == torch's
        np.testing.assert_array_equal(out["t"], ref)
        header, _, _, _ = st.read_header(self.path)
        self.assertEqual(header["x"]["dtype"], "BF16")

    def test_rejects_overlap_and_bad_sizes(self):
        def write(header):
            hb = json.dumps(header).encode()
            with open(self.path, "wb") as f:
                f.write(struct.pack("<Q", len(hb)) + hb + b"\0" * 32)

        write({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
               "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})
        with self.assertRaisesRegex(st.SafetensorsError, "overlap"):
            st.load_file(self.path)
        write({"a": {"dtype": "F32", "shape": [5], "data_offsets": [0, 16]}})
        with self.assertRaisesRegex(st.SafetensorsError, "byte size"):
            st.load_file(self.path)
        write({"a": {"dtype": "F32", "shape": [16], "data_offsets": [0, 64]}})
        with self.assertRaisesRegex(st.SafetensorsError, "data_offsets"):
            st.load_file(self.path)
        write({"a": {"dtype": "Q8", "shape": [1], "data_offsets": [0, 1]}})
        with self.assertRaisesRegex(st.SafetensorsError, "dtype"):
            st.load_file(self.path)


if __name__ == "__main__":
    unittest.main()
