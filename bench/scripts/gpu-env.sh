# Sourced by the bench run scripts: the environment a recon binary needs on this machine or the
# GPU machine. recon_gpu_env NAME BINARY exports XDG_RUNTIME_DIR (Vulkan's loader and Mesa want
# one), points the loader at NVIDIA's driver where it is installed outside the loader's search
# path (the GPU machine's /usr/local/nvidia), and stops (exit 2) when BINARY misses a shared
# library. NAME prefixes the messages.
recon_gpu_env() {
  local name=$1 bin=$2
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  local nv_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f "$nv_icd" ] &&
    ! grep -qs nvidia /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json; then
    export VK_DRIVER_FILES=$nv_icd
    echo "$name: using the NVIDIA Vulkan driver at $nv_icd"
  fi
  if command -v ldd >/dev/null && ldd "$bin" | grep -q 'not found'; then
    echo "$name: $bin is missing shared libraries:" >&2
    ldd "$bin" | grep 'not found' >&2
    echo "  (libvulkan.so.1: install the Vulkan loader; libbenchmark: keep it beside the binary)" >&2
    exit 2
  fi
}
