# loopsim as a library: `cmake --install BUILD --component dev` (or a plain `cmake --install`)
# puts each layer's static library, its headers and a CMake package under the prefix, so that
# `find_package(loopsim)` gives loopsim::realloop, loopsim::live, loopsim::model, loopsim::scenario,
# loopsim::trace, loopsim::sim, loopsim::target,
# loopsim::checker, loopsim::explore, loopsim::probe and loopsim::reports, and pkg-config reads
# loopsim.pc. examples/own-kernel-loop/ is built against it in CI (scripts/test.sh). The .deb
# leaves the dev component out: it ships the tool.
include(CMakePackageConfigHelpers)

get_property(layers GLOBAL PROPERTY loopsim_layers)
get_property(layer_dirs GLOBAL PROPERTY loopsim_layer_dirs)
install(TARGETS ${layers} EXPORT loopsimTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/loopsim)
foreach(dir ${layer_dirs})
  file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.hpp)
  list(FILTER headers EXCLUDE REGEX "(_for_tests|_reading)\\.hpp$")
  install(FILES ${headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/loopsim/${dir} COMPONENT dev)
endforeach()

set(cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/loopsim)
install(EXPORT loopsimTargets NAMESPACE loopsim:: DESTINATION ${cmake_dir} COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/loopsimConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/loopsimConfig.cmake INSTALL_DESTINATION ${cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/loopsimConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/loopsimConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/loopsimConfigVersion.cmake
  DESTINATION ${cmake_dir} COMPONENT dev)

# pkg-config: the libraries in link order, each before what it needs. The prefix is found
# from the file's own place, so the package may be installed under any prefix.
set(pc_libs "")
foreach(layer loopsim_probe loopsim_explore loopsim_reports loopsim_checker loopsim_target loopsim_sim loopsim_trace loopsim_scenario loopsim_model loopsim_live loopsim_realloop)
  string(APPEND pc_libs " -l${layer}")
endforeach()
file(RELATIVE_PATH pc_up /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)  # "../.." for lib/
configure_file(${CMAKE_CURRENT_LIST_DIR}/loopsim.pc.in ${CMAKE_CURRENT_BINARY_DIR}/loopsim.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/loopsim.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
