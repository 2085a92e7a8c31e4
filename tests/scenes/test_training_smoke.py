"""A smoke test of the training script (not training): on the tiny configuration, on the CPU, the loss
goes down over a few steps on a fixed pair, and a second call resumes from the checkpoint where the
first stopped (step count, log, weights)."""

import csv
import os
import subprocess
import sys
import tempfile
import unittest

import _paths

TRAIN = os.path.join(_paths.ROOT, "tools", "train", "train.py")
ARGS = ["--config", "tiny", "--width", "64", "--height", "48", "--batch", "2", "--pool", "2", "--fresh", "0",
        "--render-chunk", "2", "--device", "cpu", "--warmup", "1", "--lr", "2e-3", "--quiet"]


def run(directory, steps):
    env = dict(os.environ, OMP_NUM_THREADS="2")
    subprocess.run([sys.executable, TRAIN, "--dir", directory, "--steps", str(steps)] + ARGS,
                   check=True, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with open(os.path.join(directory, "log.csv")) as f:
        return list(csv.DictReader(f))


class TrainingSmoke(unittest.TestCase):
    def test_loss_decreases_and_a_second_call_resumes(self):
        with tempfile.TemporaryDirectory() as d:
            rows = run(d, 14)
            self.assertEqual([int(r["step"]) for r in rows], list(range(1, 15)))
            loss = [float(r["loss"]) for r in rows]
            first, last = sum(loss[:3]) / 3, sum(loss[-3:]) / 3
            self.assertLess(last, first * 0.9, f"loss {loss}")
            rows = run(d, 2)
            self.assertEqual([int(r["step"]) for r in rows], list(range(1, 17)))
            # resumed from the trained weights, not from a fresh start
            self.assertLess(float(rows[-1]["loss"]), first)


if __name__ == "__main__":
    unittest.main()
