#!/usr/bin/env bash
# ctest client.installed_package: installs librecon (component recon_client) from the build tree to
# a temporary prefix, builds client/examples against the INSTALLED package with CMake
# (find_package(recon) → recon::client), then once more by hand with pkg-config (librecon.pc), and
# runs both programs (--version: links, loads, and reports the library version); the C ABI's
# example and test program compiled as C11 through pkg-config.
#   installed_package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --component recon_client --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/recon/client.h"
test -f "$work/prefix/include/recon/client/version.h"
ls "$work/prefix"/lib*/cmake/recon/reconConfig.cmake >/dev/null
pc_dir=$(dirname "$(ls "$work"/prefix/lib*/pkgconfig/librecon.pc)")
if ls "$work/prefix/include/recon/client/"*_generated.h >/dev/null 2>&1; then
  echo "FAIL: generated FlatBuffers headers leaked into the public headers" >&2
  exit 1
fi

# 1. CMake package.
cmake -S "$source/client/examples" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/example" >/dev/null
"$work/example/infer_pair" --version
"$work/example/infer_pair_c" --version

# 2. pkg-config, as a Makefile would.
export PKG_CONFIG_PATH="$pc_dir"
test "$(pkg-config --modversion librecon)" = "$(sed -n 's/^#define RECON_CLIENT_VERSION "\(.*\)"/\1/p' \
  "$work/prefix/include/recon/client/version.h")"
# shellcheck disable=SC2046
c++ -std=c++20 "$source/client/examples/infer_pair.cpp" -o "$work/infer_pair_pc" $(pkg-config --cflags --libs librecon)
LD_LIBRARY_PATH="$(pkg-config --variable=libdir librecon)" "$work/infer_pair_pc" --version
# The C ABI as C11, with the tests' C program too (it needs a daemon to run: ctest
# client.c_api_with_recond runs it).
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$source/client/examples/infer_pair.c" -o "$work/infer_pair_c_pc" \
  $(pkg-config --cflags --libs librecon)
LD_LIBRARY_PATH="$(pkg-config --variable=libdir librecon)" "$work/infer_pair_c_pc" --version
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$source/tests/client/c_api_test.c" -o "$work/c_api_test_pc" \
  $(pkg-config --cflags --libs librecon) -lm

# Without a daemon the program says so and exits 3.
set +e
RECON_SOCKET_DIR="$work/no-daemon" "$work/example/infer_pair" >/dev/null 2>&1
code=$?
set -e
test "$code" -eq 3
echo "installed package OK"
