# Precompiled headers for the libraries and executables of the main build. The standard library,
# Vulkan and FlatBuffers headers take about a third of a daemon translation unit's compile time
# (several seconds each at -O2), and every one of these targets parses them; one precompiled
# header per target parses them once. RECON_PCH=OFF compiles without.
option(RECON_PCH "Precompile the standard, Vulkan and FlatBuffers headers per target" ON)

function(recon_precompile_headers target)
  if(NOT RECON_PCH)
    return()
  endif()
  target_precompile_headers(${target} PRIVATE
    <algorithm> <array> <atomic> <chrono> <cstdint> <cstring> <deque> <functional> <list> <map>
    <memory> <mutex> <optional> <span> <string> <string_view> <unordered_map> <utility> <variant>
    <vector> ${ARGN})
  # GCC 12 reports its own std::string concatenation as out of bounds (-Warray-bounds, GCC PR 105329)
  # when the standard headers come precompiled; the false positive is the library's, not ours.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-array-bounds)
  endif()
endfunction()
