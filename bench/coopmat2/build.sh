#!/bin/sh
# Builds the NV coopmat2 GEMM experiment of bench/coopmat2 into OUT (default build-coopmat2):
# Debian 13's glslc, spirv-val and Vulkan headers fetched into OUT/trixie
# (scripts/download-debian13-debs: nothing installed; about 15 MB; the tools run through Debian 13's ld.so, see
# ../shared/notes/shader-compiler-path.md), the shader compiled and validated, the bench compiled
# against the system's Vulkan loader. Run on a GPU machine:
#   OUT/coopmat2_gemm_bench OUT/gemm_cm2.spv 12288x3072x1024 256:128:256:64,128:128:128:32 0,1
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-build-coopmat2}" && cd "${1:-build-coopmat2}" && pwd)
t=$out/trixie
if [ ! -x "$t/glslc" ]; then
  mkdir -p "$t/debs" "$t/root"
  "$here/../../scripts/download-debian13-debs" "$t/debs" glslc libshaderc1 glslang-tools spirv-tools libc6 \
    libstdc++6 libgcc-s1 libvulkan-dev
  for f in "$t"/debs/*.deb; do dpkg -x "$f" "$t/root"; done
  lib=$t/root/usr/lib/x86_64-linux-gnu
  for tool in glslc spirv-val; do
    printf '#!/bin/sh\nexec %s/ld-linux-x86-64.so.2 --library-path %s %s/usr/bin/%s "$@"\n' "$lib" "$lib" "$t/root" \
      "$tool" > "$t/$tool"
    chmod +x "$t/$tool"
  done
  rm -rf "$t/debs"
fi
"$t/glslc" --target-env=vulkan1.3 -O -fshader-stage=compute "$here/gemm_cm2.comp" -o "$out/gemm_cm2.spv"
"$t/spirv-val" --target-env vulkan1.3 "$out/gemm_cm2.spv"
g++ -std=c++20 -O2 -Wall -I"$t/root/usr/include" "$here/coopmat2_gemm_bench.cpp" -o "$out/coopmat2_gemm_bench" -lvulkan
echo "built $out/coopmat2_gemm_bench and $out/gemm_cm2.spv"
