#!/usr/bin/env bash
# Runs short training variants side by side on one GPU (each a separate process) and prints the tail
# of each loss log, to choose settings before a long run. Usage: sweep.sh MINUTES OUTDIR 'NAME:ARGS' ...
set -u
minutes=$1 out=$2
shift 2
pids=()
for spec in "$@"; do
  name=${spec%%:*} extra=${spec#*:}
  mkdir -p /tmp/sweep/$name
  # shellcheck disable=SC2086
  python3 tools/train/train.py --dir /tmp/sweep/$name --minutes "$minutes" --quiet $extra >/tmp/sweep/$name.out 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
for spec in "$@"; do
  name=${spec%%:*}
  cp /tmp/sweep/$name/log.csv "$out/log-$name.csv"
  echo "== $name: ${spec#*:}"
  head -1 /tmp/sweep/$name/log.csv | cut -d, -f1,4-9
  awk -F, 'NR > 1 && NR % 100 == 1' /tmp/sweep/$name/log.csv | cut -d, -f1,4-9 | tail -8
  tail -2 /tmp/sweep/$name.out
done
