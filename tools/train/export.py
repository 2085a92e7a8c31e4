#!/usr/bin/python3
"""Writes the trained model of a checkpoint directory (train.py --dir) as one safetensors file that
recon loads: official tensor names, float32, the config under "mast3r.config", and metadata saying
what the model is (trained on recon's procedural scenes, not for real photographs), the generator
version, the steps (with those of the model a run continued, train.py --init-weights), the resolution
and, when given, the evaluation figures (evaluate.py --json).

  export.py --dir .train/run --out samples/demo-model.safetensors [--eval eval.json]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpoint  # noqa: E402
import model as demo_model  # noqa: E402
from scenes import splits  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--eval", help="evaluate.py --json output to record in the metadata")
    args = ap.parse_args()
    with open(os.path.join(args.dir, "ckpt.json")) as f:
        state = json.load(f)
    cfg = demo_model.DEMO_CONFIG if state.get("config", "demo") == "demo" else demo_model.TINY_CONFIG
    net = demo_model.build(cfg)
    checkpoint.load(args.dir, net)
    init = state.get("init") or {"steps": 0, "seconds": 0.0}
    meta = {
        "recon.description": demo_model.DESCRIPTION,
        "recon.trained": "true",
        "recon.not_for": "real photographs: trained on recon's procedural scenes only",
        "recon.generator": state["generator"],
        "recon.train_steps": init["steps"] + state["step"],
        "recon.train_batch": state["batch"],
        "recon.train_pairs_rendered": state["scene_counter"],
        "recon.train_seconds": round(init["seconds"] + state["seconds"], 1),
        "recon.train_width": state["width"],
        "recon.train_height": state["height"],
        "recon.train_seeds": f"[{splits.TRAIN_FIRST}, {splits.TRAIN_FIRST + state['scene_counter']})",
        "recon.test_seeds": f"[{splits.TEST_FIRST}, {splits.TEST_FIRST + splits.TEST_COUNT}), sample {splits.SAMPLE_SEED}",
    }
    if init["steps"]:
        # a run started with train.py --init-weights: its steps continue the file it started from
        meta["recon.train_continued_from_step"] = init["steps"]
    if args.eval:
        with open(args.eval) as f:
            meta["recon.eval"] = json.dumps(json.load(f)["summary"], sort_keys=True)
    demo_model.save_safetensors(net, args.out, meta)
    print(f"wrote {args.out}: {os.path.getsize(args.out) / 2**20:.1f} MiB, step {state['step']}")


if __name__ == "__main__":
    main()
