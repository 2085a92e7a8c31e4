"""recon: a Python client of recond, the recon GPU inference daemon.

    import recon
    client = recon.Client()                      # $RECON_SOCKET_DIR or /run/recon
    result = client.infer("a.jpg", "b.jpg")      # or uint8 arrays [H, W, 3]
    pts = result["pts3d_1"]                      # numpy view of shared memory, no copy
    matches = client.match(result, subsample=8)
    scene = client.reconstruct(paths, pairs="swin-3", progress=print)

Every tensor stays in the daemon's GPU memory until read; reading one copies it once into shared
memory that this process maps, and the numpy array views it there. Errors raise recon.Error with
the daemon's status code.

Without a daemon, on a machine with a GPU, the same model runs in this process:

    engine = recon.Engine("model.safetensors", precision="fp16-heads")
    result = engine.infer("a.jpg", "b.jpg")      # result["pts3d_1"]: copied from the GPU once
"""

from __future__ import annotations


class Error(Exception):
    """A request failed.

    code: "INVALID_ARGUMENT", "NOT_FOUND", "RESOURCE_EXHAUSTED", "UNAVAILABLE", ... (the daemon's
    status code); message: why; source: "daemon" (it answered with an error), "connection" (no
    answer: not running, timed out, gone) or "client" (refused before sending).
    """

    def __init__(self, code: str, message: str, source: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.source = source


def _load_image(path):
    """An image file as a uint8 array [H, W, 3] (RGB), as the official loader reads it (PIL)."""
    import numpy
    from PIL import Image

    with Image.open(path) as image:
        return numpy.asarray(image.convert("RGB"))


from ._recon import Client, Engine, EngineResult, Future, Result, library_version, protocol_version  # noqa: E402

__all__ = ["Client", "Engine", "EngineResult", "Error", "Future", "Result", "library_version", "protocol_version"]
