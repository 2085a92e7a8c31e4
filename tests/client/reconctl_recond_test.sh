#!/usr/bin/env bash
# ctest reconctl.with_recond: `reconctl batch`, `match`, `retrieve`, `reconstruct` and `infer-tensor` against
# the real recond on the tests' tiny model (and `infer` on the tiny DUNE-MASt3R model), golden retrieval head and (with MODELS) the MLP and
# the masked attention head (a bool input and output) exported by tests/models/onnx, with the samples prepared to 64 px (64x48).
# Checks exit codes, the files written, the error exit code of a bad request, and that a full
# daemon (every session slot held) is reported as a limit (exit 1), not as an absent daemon.
#   reconctl_recond_test.sh RECOND RECONCTL SOURCE_DIR [MODELS]
set -euo pipefail
recond=$1
reconctl=$2
source=$3
models=${4:-}
work=$(mktemp -d /tmp/reconctl-recond-XXXXXX)
# shellcheck source=../recond_fixture.sh
source "$source/tests/recond_fixture.sh"
tiny_daemon() {
  start_recond "$work/recond.log" --socket-dir "$work/run" \
    --model "mast3r=$source/tests/golden/tiny_same/model.safetensors" --warmup 64x48 --precision fp32 \
    --max-clients 2 --pipeline-cache "$work/cache.bin" \
    --retrieval "$source/tests/golden/retrieval/projector/model.safetensors" \
    ${models:+--model "mlp=$models/mlp/model.onnx" --model "masked=$models/masked/model.onnx"}
  wait_ready "$work/run" "$work/recond.log"
}
tiny_daemon
# Stops the daemon and starts one serving MODEL (fp32, warm at 64x48) on socket dir $work/runN,
# logging to $work/recondN.log:  model_daemon N MODEL
model_daemon() {
  kill_recond
  start_recond "$work/recond$1.log" --socket-dir "$work/run$1" --model "mast3r=$2" --warmup 64x48 --precision fp32 \
    --pipeline-cache "$work/cache$1.bin"
  wait_ready "$work/run$1" "$work/recond$1.log"
}
ctl() { "$reconctl" --socket-dir "$work/run" --timeout 300 "$@"; }
# Runs a reconctl command that must fail with exit code 1 (what the daemon refused); its stderr
# goes to the file $1.
expect_exit1() {
  local out=$1 code=0
  shift
  "$@" 2>"$out" || code=$?
  test "$code" = 1 || { echo "$*: expected exit code 1, got $code"; cat "$out"; exit 1; }
}
a=$source/samples/view_a.png
b=$source/samples/view_b.png

ctl batch "$a" "$b" "$a" --size 64 --pairs 0-1,1-2 --symmetric --out "$work/batch" >"$work/batch.txt"
grep -q "4 pairs in one batch" "$work/batch.txt"
for d in pair_0_0-1 pair_1_1-2 pair_2_1-0 pair_3_2-1; do
  test -f "$work/batch/$d/pts3d_1.npy"
  test -f "$work/batch/$d/desc_conf_2.npy"
done

ctl match "$a" "$b" --size 64 --subsample 4 --out "$work/match" >"$work/match.txt"
grep -q " matches (subsample 4" "$work/match.txt"
for f in matches_1.npy matches_2.npy match_conf.npy pts3d_1.npy pts3d_2.npy matches.png; do
  test -s "$work/match/$f"
done
# int32 [K, 2] in NumPy format 1.0.
head -c 80 "$work/match/matches_1.npy" | grep -q "'descr': '<i4'"

ctl retrieve "$a" "$b" "$a" --size 64 --top-k 2 >"$work/retrieve.txt"
grep -q "MOST SIMILAR" "$work/retrieve.txt"
ctl retrieve "$a" "$b" "$a" --size 64 --top-k 1 --json >"$work/retrieve.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['pairs'])==3 and d['embedding_dim']==32" \
  "$work/retrieve.json"

# A reconstruction of three views. The tiny model's random weights put the points behind the
# cameras: a clear error, exit code 1.
expect_exit1 "$work/noise.txt" ctl reconstruct "$a" "$b" "$a" --size 64 --iterations 10,10 --out "$work/noise"
grep -q "in front of the camera" "$work/noise.txt"
# The demo model (trained) at 64x48 on a second daemon: the files.
model_daemon 2 "$source/samples/demo-model.safetensors"
ctl2() { "$reconctl" --socket-dir "$work/run2" --timeout 300 "$@"; }
ctl2 reconstruct "$a" "$b" "$a" --size 64 --iterations 10,10 --min-conf 0 --out "$work/scene" \
  >"$work/scene.txt" 2>"$work/scene.err"
grep -q "reconstructed .* of 3 cameras" "$work/scene.txt"
grep -q "^align-fine" "$work/scene.err"  # the progress, one line per stage off a terminal
for f in cameras.json scene.ply scene.png sparse/0/cameras.txt sparse/0/images.txt sparse/0/points3D.txt \
         depth/view_a.npy depth/view_b.png; do
  test -s "$work/scene/$f" || { echo "missing $f"; cat "$work/scene.txt" "$work/scene.err"; exit 1; }
done
# The daemon ran the images at the 64x48 reconctl prepared them to (not again at the model's own
# 512): the principal point, after 10 + 10 iterations from the centre, maps back near the centre
# of the 512x384 originals.
python3 - "$work/scene/cameras.json" <<'PY'
import json, sys
cams = json.load(open(sys.argv[1]))["cameras"]
assert len(cams) == 3 and cams[0]["width"] == 512 and cams[0]["height"] == 384, cams[0]
for c in cams:
    assert abs(c["cx"] - 256) < 32 and abs(c["cy"] - 192) < 32, (c["cx"], c["cy"])
PY
# A parameter the job does not know: the daemon's INVALID_ARGUMENT, exit code 1.
expect_exit1 "$work/bad-scene.txt" ctl2 reconstruct "$a" "$b" --size 64 --param colour=blue --out "$work/bad-scene"
grep -q "colour" "$work/bad-scene.txt"
kill_recond
tiny_daemon

# The daemon refuses a pair request naming the retrieval model: exit code 1.
expect_exit1 "$work/bad.txt" ctl match "$a" "$b" --size 64 --model retrieval --out "$work/bad"
grep -q "retrieval model" "$work/bad.txt"

# Two side-channel connections fill --max-clients 2; reconctl must say what the daemon said.
python3 - "$work/run/regions.sock" <<'PY' &
import socket, sys, time
held = []
for _ in range(2):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    held.append(s)
time.sleep(60)
PY
holder=$!
for _ in $(seq 100); do
  ctl status --json | python3 -c "import json,sys; sys.exit(json.load(sys.stdin)['sessions_open'] != 2)" && break
  sleep 0.1
done
set +e
ctl match "$a" "$b" --size 64 --out "$work/full" 2>"$work/full.txt"
code=$?
set -e
kill "$holder"; wait "$holder" 2>/dev/null || true
test "$code" = 1 || { echo "a full daemon: expected exit code 1, got $code"; cat "$work/full.txt"; exit 1; }
grep -q "RESOURCE_EXHAUSTED" "$work/full.txt" || { cat "$work/full.txt"; exit 1; }
grep -q "at most 2 sessions" "$work/full.txt" || { cat "$work/full.txt"; exit 1; }

if [ -n "$models" ]; then
  # An ONNX model: the input from a .npy file, in shared memory and inline; the output as PyTorch gives it.
  for how in region inline; do
    flag=
    if [ "$how" = inline ]; then flag=--inline; fi
    ctl infer-tensor mlp --input "x=$models/mlp/input_1.npy" --out "$work/onnx-$how" $flag >"$work/onnx-$how.txt"
    grep -q "output y: f32 \[5,5\]" "$work/onnx-$how.txt" || { cat "$work/onnx-$how.txt"; exit 1; }
    /usr/bin/python3 -c "import numpy as n,sys; sys.exit(int(abs(n.load(sys.argv[1]) - n.load(sys.argv[2])).max() > 1e-5))" \
      "$work/onnx-$how/y.npy" "$models/mlp/expected_1.npy"
  done
  # A bool mask from a .npy of dtype |b1 (sent as U8, one byte each); the bool output as int32 0/1.
  ctl infer-tensor masked --input "x=$models/masked/x_1.npy" --input "mask=$models/masked/mask_1.npy" \
    --out "$work/masked" >"$work/masked.txt"
  grep -q "output positive: i32 \[3,8,16\]" "$work/masked.txt" || { cat "$work/masked.txt"; exit 1; }
  /usr/bin/python3 -c "import numpy as n,sys; d,m=sys.argv[1:]; sys.exit(int(abs(n.load(d+'/y.npy') - n.load(m+'/y_1.npy')).max() > 1e-5 or not n.array_equal(n.load(d+'/positive.npy'), n.load(m+'/positive_1.npy'))))" \
    "$work/masked" "$models/masked"
  expect_exit1 "$work/onnx-bad.txt" ctl infer-tensor mlp --input "w=$models/mlp/input_1.npy" --out "$work/onnx-bad"
  grep -q "takes one input 'x'" "$work/onnx-bad.txt" || { cat "$work/onnx-bad.txt"; exit 1; }
fi

# DUNE-MASt3R (the tiny golden model): without --size reconctl prepares the images as the daemon
# reports for this model (56 on the long side, 14-pixel crops) and the daemon runs them as they are.
# (Warm-up sizes are multiples of 16; the daemon warms a DUNE model at what 64x48 becomes: 56x42.)
model_daemon 3 "$source/tests/golden/dune_same/model.safetensors"
ctl3() { "$reconctl" --socket-dir "$work/run3" --timeout 300 "$@"; }
ctl3 infer "$a" "$b" --out "$work/dune" >"$work/dune.txt"
grep -q "512x384 -> 56x42" "$work/dune.txt" || { cat "$work/dune.txt"; exit 1; }
/usr/bin/python3 -c "import numpy,sys; assert numpy.load(sys.argv[1]).shape == (42, 56, 24)" "$work/dune/desc_1.npy"

stop_recond
echo "reconctl batch, match, retrieve, infer-tensor, a full daemon and a DUNE model against recond: ok"
