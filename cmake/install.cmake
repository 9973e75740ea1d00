# install + export: `cmake --install build --prefix P` installs the libraries (normcore::model,
# normcore::gen, normcore::runtime, normcore::import), their headers, the `normcore` CLI and
# P/lib/cmake/normcore/normcoreConfig.cmake, so that another project can
#   find_package(normcore REQUIRED)  ...  target_link_libraries(app PRIVATE normcore::runtime)
include(CMakePackageConfigHelpers)
set(NORMCORE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/normcore)
set(_targets normcore_model normcore_gen normcore_runtime)
set(_include_dirs model/include gen/include runtime/include)
if(NORMCORE_IMPORT)
  list(APPEND _targets normcore_import)
  list(APPEND _include_dirs import/include)
endif()
install(TARGETS ${_targets} EXPORT normcoreTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(d ${_include_dirs})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${d}/normcore DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(TARGETS normcore RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT normcoreTargets NAMESPACE normcore:: DESTINATION ${NORMCORE_CMAKE_DIR})
set(NORMCORE_WITH_IMPORT ${NORMCORE_IMPORT})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/normcoreConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/normcoreConfig.cmake
                              INSTALL_DESTINATION ${NORMCORE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/normcoreConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/normcoreConfig.cmake
              ${PROJECT_BINARY_DIR}/normcoreConfigVersion.cmake
        DESTINATION ${NORMCORE_CMAKE_DIR})
