#!/usr/bin/env bash
# ctest client.c_api_with_recond: the C ABI test program (c_api_test.c, built as C11) against a real
# recond on the tests' tiny model.
#   c_api_recond_test.sh RECOND RECONCTL C_API_TEST SOURCE_DIR
set -euo pipefail
recond=$1
reconctl=$2
program=$3
source=$4
work=$(mktemp -d /tmp/c-api-recond-XXXXXX)
# shellcheck source=../recond_fixture.sh
source "$source/tests/recond_fixture.sh"
start_recond "$work/recond.log" --socket-dir "$work/run" \
  --model "mast3r=$source/tests/golden/tiny_same/model.safetensors" --warmup 64x48 --precision fp32 \
  --pipeline-cache "$work/cache.bin"
wait_ready "$work/run" "$work/recond.log"
"$program" "$work/run"
stop_recond
