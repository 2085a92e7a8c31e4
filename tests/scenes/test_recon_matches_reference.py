"""recon (C++ on Vulkan, recon-infer in fp32) and the PyTorch reference give the same outputs on the
shipped demo model (samples/demo-model.safetensors) for the sample pair at the demo size, 256x192:
pointmaps, confidences, descriptors and descriptor confidences within 1e-4 (relative to each
tensor's scale). Needs RECON_INFER (ctest sets it to the build's tools/recon-infer)."""

import os
import subprocess
import tempfile
import unittest

import numpy as np
import torch
from PIL import Image

import _paths
import data
import model as demo_model

MODEL = os.path.join(_paths.ROOT, "samples", "demo-model.safetensors")
TOL = 1e-4


@unittest.skipUnless(os.environ.get("RECON_INFER"), "RECON_INFER (the recon-infer binary) is not set")
class ReconMatchesReference(unittest.TestCase):
    def test_shipped_model_outputs_equal_the_reference_on_the_sample_pair(self):
        torch.set_num_threads(2)
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name in ("view_a", "view_b"):
                # already 256x192: recon's loader neither resizes nor crops, so both see these pixels
                img = Image.open(os.path.join(_paths.ROOT, "samples", name + ".png")).convert("RGB")
                img = img.resize((256, 192), Image.BICUBIC)
                paths.append(os.path.join(d, name + ".png"))
                img.save(paths[-1])
            out = os.path.join(d, "out")
            subprocess.run([os.environ["RECON_INFER"], "--model", MODEL, "--size", "256", "--precision", "fp32",
                            paths[0], paths[1], "--out", out], check=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
            net, _ = demo_model.load_safetensors(MODEL)
            u8 = [torch.as_tensor(np.array(Image.open(p).convert("RGB")))[None] for p in paths]
            with torch.no_grad():
                ref = net(data.normalise(u8[0]), data.normalise(u8[1]))
            for name in ("pts3d_1", "pts3d_2", "conf_1", "conf_2", "desc_1", "desc_2", "desc_conf_1", "desc_conf_2"):
                got = np.load(os.path.join(out, name + ".npy"))
                want = ref[name][0].numpy()
                self.assertEqual(got.shape, want.shape, name)
                scale = max(1.0, float(np.abs(want).max()))
                err = float(np.abs(got - want).max()) / scale
                self.assertLess(err, TOL, f"{name}: max error {err:.2e} of scale {scale:.3g}")


if __name__ == "__main__":
    unittest.main()
