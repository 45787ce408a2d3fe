# ptrun_warnings(target): the project's warning set, as errors when PTRUN_WERROR is on.
function(ptrun_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wsign-conversion -Wnon-virtual-dtor)
  if(PTRUN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
