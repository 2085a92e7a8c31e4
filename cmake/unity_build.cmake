# Unity builds for the libraries whose translation units spend most of their compile time in the
# same headers (the daemon, the client, the ONNX engine): CMake compiles their sources in batches
# of 8 as one translation unit each. On the 2-core build machine this cut building recond and
# reconctl from 439 s to 248 s (docs/PERFORMANCE.md, "Build"). The price is in incremental
# builds: touching one file recompiles its batch. RECON_UNITY_BUILD=OFF compiles file by file.
# Sources of a target built this way must not define the same name twice in anonymous namespaces.
option(RECON_UNITY_BUILD "Compile the heaviest targets in unity batches" ON)

function(recon_unity_build target)
  if(RECON_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
