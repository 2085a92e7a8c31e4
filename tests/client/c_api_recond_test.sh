#!/usr/bin/env bash
# ctest client.c_api_with_recond: the C ABI test program (c_api_test.c, built as C11) against a real
# recond on the tests' tiny model.
#   c_api_recond_test.sh RECOND C_API_TEST SOURCE_DIR
set -euo pipefail
recond=$1
program=$2
source=$3
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$recond" --foreground --config /dev/null --socket-dir "$work/run" \
  --model "mast3r=$source/tests/golden/tiny_same/model.safetensors" --warmup 64x48 --precision fp32 \
  --pipeline-cache "$work/cache.bin" >"$work/recond.log" 2>&1 &
pid=$!
for _ in $(seq 1 3000); do
  [ -S "$work/run/client.sock" ] && grep -q "Ready" "$work/recond.log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/recond.log"; exit 1; }
  sleep 0.2
done
"$program" "$work/run"
kill -TERM "$pid"
wait "$pid"
pid=
