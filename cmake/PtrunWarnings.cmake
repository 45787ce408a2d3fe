# ptrun_warnings(target): the project's warning set, as errors when PTRUN_WERROR is on.
function(ptrun_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wsign-conversion -Wnon-virtual-dtor)
  # GCC 12 at -O3 (Release) reports std::string assignments as overlapping memcpy calls
  # (-Wrestrict false positive, GCC bug 105329, fixed in 13).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(PTRUN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
