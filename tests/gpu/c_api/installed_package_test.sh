#!/usr/bin/env bash
# ctest runtime_c.installed_package: installs librecon-runtime (component recon_runtime) from the
# build tree to a temporary prefix and checks what a user's build sees: the headers, the library
# and librecon-runtime.pc (its version the project's). Then the C tests of tests/gpu/c_api are
# compiled as C11 (-Wall -Wextra -Werror -pedantic) through pkg-config against the INSTALLED
# package and run; a program including librecon's recon.h (from the source tree) and the installed
# runtime.h together compiles and runs (the enums they share are defined once, in c_common.h).
#   installed_package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --component recon_runtime --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/recon/runtime.h"
test -f "$work/prefix/include/recon/c_common.h"
pc=$(ls "$work"/prefix/lib*/pkgconfig/librecon-runtime.pc)
ls "$(dirname "$(dirname "$pc")")"/librecon-runtime.so.0 >/dev/null
if ls "$work/prefix/include/gpu" >/dev/null 2>&1; then
  echo "FAIL: GPU runtime headers leaked into the installed package" >&2
  exit 1
fi

export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
version=$(sed -n 's/^project(recon VERSION \([0-9.]*\).*/\1/p' "$source/CMakeLists.txt")
test "$(pkg-config --modversion librecon-runtime)" = "$version"
libdir=$(pkg-config --variable=libdir librecon-runtime)

for name in ops_test sequence_test misuse_test; do
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Wextra -Werror -pedantic "$source/tests/gpu/c_api/$name.c" -o "$work/$name" \
    $(pkg-config --cflags --libs librecon-runtime) -lm -pthread
  LD_LIBRARY_PATH="$libdir" "$work/$name"
done

# Both C ABIs in one translation unit.
cat >"$work/both.c" <<'C'
#include <recon/recon.h>
#include <recon/runtime.h>
int main(void) {
  recon_dtype d = RECON_F16;
  recon_status s = RECON_INVALID_ARGUMENT;
  return (int)d + (int)s - 2 + (int)(recon_runtime_abi_version() - RECON_RUNTIME_ABI_VERSION);
}
C
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -pedantic "$work/both.c" -o "$work/both" \
  $(pkg-config --cflags --libs librecon-runtime) -I"$source/client/lib/include"
LD_LIBRARY_PATH="$libdir" "$work/both"
echo "installed package OK"
