# Turns one SPIR-V binary into a C++ source holding it as a uint32_t array.
# Invoked as: cmake -DIN=x.spv -DOUT=x.spv.cpp -DNAME=x -P embed_spirv.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR rem "${hex_len} % 8")
if(NOT rem EQUAL 0)
  message(FATAL_ERROR "${IN}: size is not a multiple of 4 bytes")
endif()
# SPIR-V words are little-endian on every target we build for.
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])"
       "0x\\4\\3\\2\\1u," words "${hex}")
math(EXPR word_count "${hex_len} / 8")
file(WRITE "${OUT}" "// Generated from ${NAME}.spv by cmake/embed_spirv.cmake. Do not edit.\n"
  "#include <cstddef>\n#include <cstdint>\n"
  "extern const uint32_t recon_spv_${NAME}[] = {${words}};\n"
  "extern const size_t recon_spv_${NAME}_words = ${word_count};\n")
