# Install and packaging: `cmake --install` puts loopsim and its man page under the prefix;
# `cpack` (in the build directory) makes a Debian package that adds the loopsim-live service.
# Included at the end of the top-level CMakeLists.txt. The package holds the binary, the POSIX
# seam in PREFIX/lib/loopsim/ (where an installed loopsim looks for it: target/target.cpp), the
# scenarios and examples in PREFIX/share/loopsim/, and the docs in PREFIX/share/doc/loopsim/.
# The libraries, headers and CMake package are the dev component (library.cmake), which the
# .deb leaves out.

# The sanitizer build is for tests: its binary needs ASan's runtime and is nothing to ship.
if(LOOPSIM_SANITIZE)
  message(STATUS "packaging: not in the sanitizer build")
  return()
endif()

include(GNUInstallDirs)
include(${CMAKE_CURRENT_LIST_DIR}/library.cmake)
install(TARGETS loopsim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT loopsim)
# Not LIBDIR: its multiarch part depends on the prefix, and loopsim finds the seam at
# BINDIR/../lib/loopsim whatever the prefix is.
install(TARGETS loopsim_seam LIBRARY DESTINATION lib/loopsim COMPONENT loopsim)
# The host a statically linked target runs in, beside the seam that loads the program into it.
install(TARGETS loopsim_seam_host RUNTIME DESTINATION lib/loopsim COMPONENT loopsim)

# Something to run once installed: every scenario, and the examples' scenarios with what they
# need beside them (configs, scripts, files served). The targets built from C here (ev_http,
# uv_http) are not installed, so their two examples need a source build; the others run the
# Debian packages of the programs they name.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/scenarios/ DESTINATION ${CMAKE_INSTALL_DATADIR}/loopsim/scenarios
  COMPONENT loopsim FILES_MATCHING PATTERN "*.toml" PATTERN "*.md")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/loopsim/examples
  COMPONENT loopsim
  REGEX "/examples/CMakeLists\\.txt$" EXCLUDE  # builds the C targets: for the source tree only
  REGEX "/logs/.+" EXCLUDE)                    # nginx's run-time files; the folder is kept
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT loopsim)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT loopsim
  FILES_MATCHING PATTERN "*.md" PATTERN "*.svg" PATTERN "*.png")

# The man page is the CLI's own --help, each subcommand's included, so it is rewritten whenever
# the binary is. It is written by running the binary, which a cross build cannot do.
if(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(STATUS "packaging: no man page: a cross-compiled loopsim cannot run here to print its help")
else()
  set(man_page ${CMAKE_CURRENT_BINARY_DIR}/loopsim.1)
  add_custom_command(
    OUTPUT ${man_page} ${man_page}.gz
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/make-man.sh $<TARGET_FILE:loopsim> ${PROJECT_VERSION} ${man_page}
    # -n: no name or time stamp in the archive, so the same page compresses to the same bytes.
    COMMAND gzip -9 -n -k -f ${man_page}
    DEPENDS loopsim ${CMAKE_CURRENT_LIST_DIR}/make-man.sh
    COMMENT "Writing the man page loopsim.1 from loopsim --help"
    VERBATIM)
  add_custom_target(loopsim_man ALL DEPENDS ${man_page}.gz)
  install(FILES ${man_page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT loopsim)
endif()

# The service's unit and settings name /usr/bin/loopsim and /etc/default/loopsim-live, so they
# belong to the package only: a plain `cmake --install` (to /usr/local, or as a user) leaves
# them out. `cmake --install BUILD --component service` installs them on their own.
install(FILES ${CMAKE_CURRENT_LIST_DIR}/loopsim-live.service
  DESTINATION /lib/systemd/system COMPONENT service EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/loopsim-live.default
  DESTINATION /etc/default RENAME loopsim-live COMPONENT service EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME loopsim)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "loopsim developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "deterministic simulation and model checking of event loops")
set(CPACK_PACKAGE_DESCRIPTION [[
loopsim drives a real event loop through scripted bursts and floods on a
simulated kernel with a virtual clock, and judges the trace against
properties. `loopsim live` serves real HTTP on epoll with the same loop, and
the loopsim-live service runs it: installed, neither enabled nor started.]])
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# One package from both components: the binary and man page, and the service.
set(CPACK_INSTALL_CMAKE_PROJECTS
  "${CMAKE_BINARY_DIR};${PROJECT_NAME};loopsim;/"
  "${CMAKE_BINARY_DIR};${PROJECT_NAME};service;/")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_NAME loopsim)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "loopsim developers")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The libraries' packages, read from the binary by dpkg-shlibdeps (dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_CURRENT_LIST_DIR}/deb/conffiles
  ${CMAKE_CURRENT_LIST_DIR}/deb/postinst
  ${CMAKE_CURRENT_LIST_DIR}/deb/prerm
  ${CMAKE_CURRENT_LIST_DIR}/deb/postrm)
# Maintainer scripts 0755 and conffiles 0644 whatever the checkout's modes are.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
