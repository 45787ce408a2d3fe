# Installation of the libraries, public headers and man pages, plus the CMake package
# (find_package(ptrun) -> ptrun::ddp, ptrun::rendezvous, ptrun::env, ...) and pkg-config files.
# Executables (ptrun, ptrun-store) install themselves where they are defined. Included once, at the
# end of the top-level CMakeLists.txt, after every module exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(PTRUN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ptrun)

# ptrun_logging (spdlog compiled into a static library over header-only fmt) and ptrun_sys (header-only, private headers) are exported
# too: the static libraries carry them as link-only dependencies; a consumer links nothing more.
set(ptrun_exported)
foreach(module logging sys env slurm progress rendezvous ddp)
  if(TARGET ptrun_${module})
    list(APPEND ptrun_exported ptrun_${module})
    set_target_properties(ptrun_${module} PROPERTIES EXPORT_NAME ${module})
  endif()
endforeach()
install(TARGETS ${ptrun_exported} EXPORT ptrunTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(module env slurm progress rendezvous ddp)
  if(TARGET ptrun_${module})
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${module}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()
install(EXPORT ptrunTargets NAMESPACE ptrun:: DESTINATION ${PTRUN_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ptrunConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/ptrunConfig.cmake
                              INSTALL_DESTINATION ${PTRUN_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ptrunConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ptrunConfig.cmake ${PROJECT_BINARY_DIR}/ptrunConfigVersion.cmake
        DESTINATION ${PTRUN_INSTALL_CMAKEDIR})

# pkg-config: relocatable (prefix from the .pc file's own location), so `cmake --install --prefix`
# anywhere gives working files.
file(RELATIVE_PATH PTRUN_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" PTRUN_PC_TO_PREFIX "${PTRUN_PC_TO_PREFIX}")
set(CMAKE_DL_LIBS_FLAG "")
if(CMAKE_DL_LIBS)
  set(CMAKE_DL_LIBS_FLAG -l${CMAKE_DL_LIBS})
endif()
foreach(pc ptrun-ddp ptrun-rendezvous)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

file(GLOB ptrun_man_pages ${PROJECT_SOURCE_DIR}/man/*.1)
install(FILES ${ptrun_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
