#!/usr/bin/env bash
# ctest runtime_c.abi_symbols: librecon-runtime exports exactly the functions recon/runtime.h
# declares, each under the symbol version RECON_RUNTIME_1, and nothing else (no C++ symbol of the
# GPU runtime inside it, no embedded SPIR-V table); its linker map names the same list.
#   abi_symbols_test.sh LIBRECON_RUNTIME_SO HEADER MAP
set -euo pipefail
library=$1
header=$2
map=$3
declared=$(grep -o 'RECON_RUNTIME_API [^(]*' "$header" | grep -o 'recon_[a-z0-9_]*$' | sort)
# Every defined dynamic symbol but the version node itself: "VERSION NAME".
exported=$(objdump -T "$library" | awk '($2 == "g" || $2 == "w" || $2 == "u") && $3 != "*UND*" && $4 != "*UND*" && $4 != "*ABS*" { print $(NF-1) " " $NF }')
names=$(echo "$exported" | awk '{ print $2 }' | sort)
if [ "$declared" != "$names" ]; then
  echo "FAIL: the exported symbols differ from runtime.h's declarations (< header, > library)" >&2
  diff <(echo "$declared") <(echo "$names") >&2 || true
  exit 1
fi
unversioned=$(echo "$exported" | awk '$1 != "RECON_RUNTIME_1" { print $2 }')
if [ -n "$unversioned" ]; then
  echo "FAIL: symbols without version RECON_RUNTIME_1: $unversioned" >&2
  exit 1
fi
in_map=$(sed -n '/global:/,/local:/p' "$map" | grep -o 'recon_[a-z0-9_]*' | sort)
if [ "$declared" != "$in_map" ]; then
  echo "FAIL: runtime.map's list differs from runtime.h's declarations (< header, > map)" >&2
  diff <(echo "$declared") <(echo "$in_map") >&2 || true
  exit 1
fi
echo "C ABI: $(echo "$declared" | wc -l) functions, all RECON_RUNTIME_1, nothing else exported"
