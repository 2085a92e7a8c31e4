#!/usr/bin/env bash
# Two training variants side by side from scratch for MINUTES; keeps the checkpoint of the one with the
# better matching accuracy over its last 200 steps (into .train/run and OUT) and both loss logs.
#   bash tools/train/pick2.sh MINUTES OUT 'ARGS A' 'ARGS B'
set -uo pipefail
minutes=$1 out=$2 a=$3 b=$4
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
# shellcheck disable=SC2086
python3 tools/train/train.py --dir /tmp/va --minutes "$minutes" --quiet $a >/tmp/va.out 2>&1 &
pa=$!
# shellcheck disable=SC2086
python3 tools/train/train.py --dir /tmp/vb --minutes "$minutes" --quiet $b >/tmp/vb.out 2>&1 &
pb=$!
wait $pa; wait $pb
for v in va vb; do
  echo "== $v"; tail -3 /tmp/$v.out
  awk -F, 'NR > 1 && NR % 250 == 1' /tmp/$v/log.csv | cut -d, -f1,4-9 | tail -30
done
acc() { tail -200 "$1/log.csv" | awk -F, '{ s += $8 } END { print s / NR }'; }
sa=$(acc /tmp/va) sb=$(acc /tmp/vb)
echo "match_acc over the last 200 steps: A $sa, B $sb"
win=va
awk -v x="$sb" -v y="$sa" 'BEGIN { exit !(x > y) }' && win=vb
echo "keeping $win"
mkdir -p .train/run
cp /tmp/$win/ckpt* /tmp/$win/log.csv .train/run/
cp /tmp/$win/ckpt* "$out"/
cp /tmp/va/log.csv "$out"/log-A.csv
cp /tmp/vb/log.csv "$out"/log-B.csv
echo $win > "$out"/winner.txt
