#!/usr/bin/env bash
# One training chunk on a CUDA machine: resumes .train/run (when it holds a checkpoint) for MINUTES,
# then copies the checkpoint shards and the loss log to OUT (from where they go back into .train/run
# for the next chunk, wherever that runs). Extra arguments go to train.py.
#   bash tools/train/chunk.sh MINUTES OUT [train.py arguments...]
set -euo pipefail
minutes=$1 out=$2
shift 2
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p .train/run
python3 tools/train/train.py --dir .train/run --minutes "$minutes" "$@" 2>&1 | grep -v "^step=" | tail -5
awk -F, 'NR > 1 && NR % 250 == 1' .train/run/log.csv | cut -d, -f1,4-9 | tail -30
cp .train/run/ckpt* .train/run/log.csv "$out"/
