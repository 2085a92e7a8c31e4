# check_frozen_structs.cmake: every struct of every released schema must exist unchanged in the
# current schema (a struct's fields are its byte layout on the wire; flatc --conform in 2.0.8
# does not look at structs). Comments and whitespace do not count.
# cmake -DRELEASED=<dir> -DCURRENT=<dir> -P check_frozen_structs.cmake

function(read_structs dir prefix out_names)
  file(GLOB files ${dir}/*.fbs)
  set(names)
  foreach(f ${files})
    file(READ ${f} text)
    string(REPLACE ";" "," text "${text}")  # a ';' would split CMake lists
    string(REGEX REPLACE "//[^\n]*" "" text "${text}")
    string(REGEX REPLACE "[ \t\r\n]+" " " text "${text}")
    string(REGEX MATCHALL "struct [A-Za-z0-9_]+ ?[^{]*{[^}]*}" structs "${text}")
    foreach(s IN LISTS structs)
      string(REGEX REPLACE "^struct ([A-Za-z0-9_]+).*" "\\1" name "${s}")
      string(REPLACE " " "" body "${s}")
      list(APPEND names ${name})
      set(${prefix}_${name} "${body}" PARENT_SCOPE)
    endforeach()
  endforeach()
  set(${out_names} ${names} PARENT_SCOPE)
endfunction()

read_structs(${RELEASED} RELEASED released_names)
read_structs(${CURRENT} CURRENT current_names)

set(failed FALSE)
foreach(name ${released_names})
  if(NOT DEFINED CURRENT_${name})
    message(SEND_ERROR "struct ${name} of the released schema is gone")
    set(failed TRUE)
  elseif(NOT "${CURRENT_${name}}" STREQUAL "${RELEASED_${name}}")
    message(SEND_ERROR "struct ${name} changed:\n  released: ${RELEASED_${name}}\n  current:  ${CURRENT_${name}}")
    set(failed TRUE)
  endif()
endforeach()
list(LENGTH released_names count)
if(count EQUAL 0)
  message(FATAL_ERROR "no structs found in ${RELEASED}: the check itself is broken")
endif()
if(NOT failed)
  message(STATUS "${count} released structs unchanged")
endif()
