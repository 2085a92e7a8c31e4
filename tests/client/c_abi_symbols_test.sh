#!/usr/bin/env bash
# ctest client.c_abi_symbols: librecon exports exactly the C functions recon/recon.h declares, each
# under the symbol version RECON_C_1, and no other unmangled symbol (the C++ API's are mangled).
#   c_abi_symbols_test.sh LIBRECON_SO HEADER
set -euo pipefail
library=$1
header=$2
declared=$(grep -o 'RECON_C_API [^(]*' "$header" | grep -o 'recon_[a-z0-9_]*$' | sort)
exported=$(objdump -T "$library" | awk '$2 == "g" && $4 == ".text" { print $6 " " $7 }' | grep -v '^ ' || true)
c_exported=$(echo "$exported" | awk '$2 !~ /^_Z/ { print $2 }' | sort)
if [ "$declared" != "$c_exported" ]; then
  echo "FAIL: the unmangled exports differ from recon.h's declarations" >&2
  diff <(echo "$declared") <(echo "$c_exported") >&2 || true
  exit 1
fi
unversioned=$(echo "$exported" | awk '$2 ~ /^recon_/ && $1 != "RECON_C_1" { print $2 }')
if [ -n "$unversioned" ]; then
  echo "FAIL: C symbols without version RECON_C_1: $unversioned" >&2
  exit 1
fi
echo "C ABI: $(echo "$declared" | wc -l) functions, all RECON_C_1"
