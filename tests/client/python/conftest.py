"""Fixtures of the Python client's tests: a real recond on a private socket directory.

RECOND (the daemon's executable) and RECON_SOURCE (the source tree) come from ctest
(tests/client/CMakeLists.txt); PYTHONPATH points at the built package.
"""

import os
import signal
import subprocess
import tempfile
import time

import numpy
import pytest

import recon

SOURCE = os.environ.get("RECON_SOURCE", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TINY_MODEL = os.path.join(SOURCE, "tests/golden/tiny_same/model.safetensors")
DEMO_MODEL = os.path.join(SOURCE, "samples/demo-model.safetensors")
RETRIEVAL_HEAD = os.path.join(SOURCE, "tests/golden/retrieval/projector/model.safetensors")
H, W = 48, 64


class Recond:
    """recond in the foreground with `model` as "mast3r", warmed at 64x48; stop() must exit 0."""

    def __init__(self, model, *extra):
        self.dir = tempfile.mkdtemp(prefix="recon-python-test-")
        self.sockets = os.path.join(self.dir, "run")
        self.log = open(os.path.join(self.dir, "recond.log"), "w")
        self.process = subprocess.Popen(
            [os.environ["RECOND"], "--foreground", "--config", "/dev/null", "--socket-dir", self.sockets,
             "--model", "mast3r=" + model, "--warmup", f"{W}x{H}", "--precision", "fp32",
             "--pipeline-cache", os.path.join(self.dir, "cache.bin"), *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.read_log()
            try:
                if recon.Client(self.sockets, session=False, timeout=2).status()["state"] == "READY":
                    return
            except recon.Error:
                pass
            time.sleep(0.2)
        raise TimeoutError("recond did not become ready:\n" + self.read_log())

    def read_log(self):
        with open(os.path.join(self.dir, "recond.log")) as f:
            return f.read()

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=60)
        self.log.close()
        return code


@pytest.fixture(scope="session")
def tiny_daemon():
    daemon = Recond(TINY_MODEL, "--retrieval", RETRIEVAL_HEAD)
    yield daemon
    assert daemon.stop() == 0, daemon.read_log()


@pytest.fixture()
def client(tiny_daemon):
    return recon.Client(tiny_daemon.sockets, client_name="pytest", timeout=120)


def image(seed):
    """A deterministic RGB image [48, 64, 3]."""
    i = numpy.arange(H * W * 3, dtype=numpy.uint64) + seed * 7919
    return ((i * 31 + i // 191) % 256).astype(numpy.uint8).reshape(H, W, 3)
