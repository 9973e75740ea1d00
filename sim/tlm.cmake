# SystemC/TLM-2.0 model of the generated devices (issue 5): the Verilated RTL with Verilator's
# SystemC output inside normcore::vp::TlmAccelerator (tlm_bridge.hpp). For each device <name> in
# NORMCORE_TLM_DEVICES, at build time:
#   verilator --sc --trace --build  ->  devices/<name>/obj_sc/V<name>__ALL.a, libverilated_sc.a and
#                               nc_sim_model.hpp (models.cmake's script mode)
#   tlm_plugin.cpp + plugin_common.cpp + both archives + libsystemc
#       ->  devices/<name>/libnormcore_tlm.so
#       (target normcore_tlm_<name>; tlm_<name> builds it with everything it needs), loaded by
#       the runtime's tlm backend (runtime/src/sim_loader.cpp): tlm:<manifest>
#   examples/tlm_sc_main.cpp  ->  tlm_sc_main_<name>  (ctest tlm.sc_main.<name>)
# Tests (ctest label tlm): tlm_tests (sim/test_tlm.cpp through the runtime: open_device("tlm:..")
# and the driver) and tlm_bridge_tests (the same file with NC_TLM_BRIDGE_TESTS: the module itself
# on the default device, its own sc_main).
# SystemC is Debian's libsystemc (pkg-config only), built for C++17: our C++20 code that includes
# its headers is compiled with SC_CPLUSPLUS=201703L (else: undefined sc_api_version_..._cxx202002L).
find_package(PkgConfig REQUIRED)
pkg_check_modules(SystemC REQUIRED IMPORTED_TARGET systemc)
set(NORMCORE_TLM_DEVICES "normcore;nc_small" CACHE STRING
    "Devices (of NORMCORE_DEVICES) that get the SystemC/TLM-2.0 plugin and example")

add_library(normcore_systemc INTERFACE)
target_link_libraries(normcore_systemc INTERFACE PkgConfig::SystemC)
target_compile_definitions(normcore_systemc INTERFACE SC_CPLUSPLUS=201703L)

# normcore_tlm_model(<name> [RTL_DIR <d>] [OUT_DIR <d>] [OBJ_DIR <d>] [DEPENDS <targets>]
#                    [NO_EXAMPLE])
# As normcore_sim_plugin (models.cmake): the design's RTL_DIR (default devices/<name>/rtl), the
# plugin libnormcore_tlm.so in OUT_DIR (default devices/<name>), objects in OBJ_DIR (default
# OUT_DIR/obj_sc); NO_EXAMPLE: no sc_main example (`normcore sim-build` for a user's design).
function(normcore_tlm_model name)
  cmake_parse_arguments(PARSE_ARGV 1 A "NO_EXAMPLE" "RTL_DIR;OUT_DIR;OBJ_DIR" "DEPENDS")
  if(NOT A_OUT_DIR)
    set(A_OUT_DIR ${NORMCORE_DEVICES_DIR}/${name})
  endif()
  if(NOT A_RTL_DIR)
    set(A_RTL_DIR ${A_OUT_DIR}/rtl)
  endif()
  if(NOT A_OBJ_DIR)
    set(A_OBJ_DIR ${A_OUT_DIR}/obj_sc)
  endif()
  if(NOT DEFINED A_DEPENDS)
    set(A_DEPENDS device_${name})
  endif()
  set(dir ${A_OUT_DIR})
  set(obj ${A_OBJ_DIR})
  set(manifest ${A_RTL_DIR}/manifest.json)
  file(MAKE_DIRECTORY ${obj})
  set(model_a ${obj}/V${name}__ALL.a)
  set(vlib_a ${obj}/libverilated_sc.a)
  set(header ${obj}/nc_sim_model.hpp)
  set(vobjs verilated verilated_threads verilated_vcd_c)
  list(TRANSFORM vobjs APPEND .o OUTPUT_VARIABLE vobj_files)
  list(TRANSFORM vobj_files PREPEND ${obj}/ OUTPUT_VARIABLE vobj_paths)
  set(objcache OBJCACHE=)
  if(CCACHE_PROGRAM)
    set(objcache OBJCACHE=${CCACHE_PROGRAM})
  endif()
  add_custom_command(
    OUTPUT ${model_a} ${vlib_a} ${header}
    BYPRODUCTS ${obj}/V${name}.h ${vobj_paths}
    COMMAND ${CMAKE_COMMAND} -E env ${objcache}
            ${VERILATOR_EXE} --sc --build -j 2 -Wall --x-assign unique --x-initial unique --trace
            --top-module ${name}_top --prefix V${name} -Mdir ${obj}
            -CFLAGS "-fPIC -O2 -std=c++20 -DSC_CPLUSPLUS=201703L" -MAKEFLAGS "OPT_FAST=-O2"
            -F ${A_RTL_DIR}/filelist.f
    COMMAND ${CMAKE_COMMAND} -E env ${objcache}
            ${MAKE_EXE} -s -C ${obj} -f V${name}.mk OPT_GLOBAL=-O2 ${vobj_files}
    COMMAND ${CMAKE_COMMAND} -E rm -f ${vlib_a}
    COMMAND ${CMAKE_AR} rcs ${vlib_a} ${vobj_paths}
    COMMAND ${CMAKE_COMMAND} -DMANIFEST=${manifest} -DOUT=${header} -DNAME=${name}
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/models.cmake
    COMMAND ${CMAKE_COMMAND} -E touch ${model_a}
    DEPENDS ${manifest} ${A_DEPENDS} ${CMAKE_CURRENT_FUNCTION_LIST_FILE}
            ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/models.cmake
    WORKING_DIRECTORY ${obj}
    JOB_POOL normcore_verilate
    COMMENT "verilate ${name}_top (SystemC) for the tlm plugin"
    VERBATIM)
  add_custom_target(verilate_sc_${name} DEPENDS ${model_a} ${vlib_a} ${header})

  # Everything that instantiates the SystemC model: its archives, headers and SystemC.
  set(model normcore_tlm_model_${name})
  add_library(${model} INTERFACE)
  add_dependencies(${model} verilate_sc_${name})
  target_include_directories(${model} SYSTEM INTERFACE ${obj} ${NORMCORE_VERILATOR_ROOT}/include
                                                       ${NORMCORE_VERILATOR_ROOT}/include/vltstd)
  target_include_directories(${model} INTERFACE ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  # As in V<name>_classes.mk for --sc --trace (the archives are compiled with these); the tlm
  # plugin's trace= dumps through VerilatedVcdC (tlm_plugin.cpp).
  target_compile_definitions(${model} INTERFACE VM_COVERAGE=0 VM_SC=1 VM_TRACE=1 VM_TRACE_FST=0
                                                VM_TRACE_VCD=1)
  target_link_libraries(${model} INTERFACE ${model_a} ${vlib_a} normcore_systemc Threads::Threads)

  # The plugin: only the normcore_sim_* functions (and sc_main, which libsystemc.so refers to)
  # are exported; the runtime, Verilator's library and the model stay private.
  set(tgt normcore_tlm_${name})
  add_library(${tgt} MODULE ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/tlm_plugin.cpp
                            ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin_common.cpp)
  add_dependencies(${tgt} verilate_sc_${name})
  target_link_libraries(${tgt} PRIVATE ${model} normcore::runtime nlohmann_json::nlohmann_json
                                       normcore_warnings)
  target_link_options(${tgt} PRIVATE -Wl,--exclude-libs,ALL -Wl,--no-undefined)
  set_target_properties(${tgt} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME normcore_tlm
    LIBRARY_OUTPUT_DIRECTORY ${dir}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS "${model_a};${vlib_a}")
  add_custom_target(tlm_${name} ALL)
  add_dependencies(tlm_${name} ${tgt})
  if(A_NO_EXAMPLE)
    return()
  endif()

  # The sc_main example on this device.
  set(ex tlm_sc_main_${name})
  add_executable(${ex} ${PROJECT_SOURCE_DIR}/examples/tlm_sc_main.cpp)
  add_dependencies(${ex} verilate_sc_${name})
  target_include_directories(${ex} PRIVATE ${A_RTL_DIR})
  target_compile_definitions(${ex} PRIVATE NC_REGS_HEADER="${name}_regs.hpp" NC_REGS_NS=${name}_regs)
  target_link_libraries(${ex} PRIVATE ${model} normcore::model normcore_warnings)
  set_target_properties(${ex} PROPERTIES LINK_DEPENDS "${model_a};${vlib_a}")
  add_dependencies(tlm_${name} ${ex})
endfunction()

foreach(_dev ${NORMCORE_TLM_DEVICES})
  if(NOT _dev IN_LIST NORMCORE_DEVICES)
    message(FATAL_ERROR "NORMCORE_TLM_DEVICES: ${_dev} is not a device (${NORMCORE_DEVICES})")
  endif()
  normcore_tlm_model(${_dev})
endforeach()
# The float devices (cmake/devices.cmake, issue 18) get the plugin too, without the sc_main
# example (it checks the integer golden model); tests/cli/cli_float.sh runs them against ref:.
set(NORMCORE_TLM_FLOAT_DEVICES "${NORMCORE_FLOAT_DEVICES}" CACHE STRING
    "Float devices (of NORMCORE_FLOAT_DEVICES) that get the SystemC/TLM-2.0 plugin")
foreach(_dev ${NORMCORE_TLM_FLOAT_DEVICES})
  if(NOT _dev IN_LIST NORMCORE_FLOAT_DEVICES)
    message(FATAL_ERROR "NORMCORE_TLM_FLOAT_DEVICES: ${_dev} is not a float device")
  endif()
  normcore_tlm_model(${_dev} NO_EXAMPLE)
endforeach()

# The ring devices (issue 19) too, without the example; sim/test_ring.cpp runs them. Only those
# the project defines (none in a `normcore sim-build` of a user's design: sim/user).
set(_tlm_ring_default)
foreach(_dev nc_ring nc_small_ring)
  if(_dev IN_LIST NORMCORE_RING_DEVICES)
    list(APPEND _tlm_ring_default ${_dev})
  endif()
endforeach()
set(NORMCORE_TLM_RING_DEVICES "${_tlm_ring_default}" CACHE STRING
    "Ring devices (of NORMCORE_RING_DEVICES) that get the SystemC/TLM-2.0 plugin")
foreach(_dev ${NORMCORE_TLM_RING_DEVICES})
  normcore_tlm_model(${_dev} NO_EXAMPLE)
endforeach()

if(NOT NORMCORE_TESTS)
  return()
endif()
if(NORMCORE_SIM_BACKEND)
  foreach(_dev ${NORMCORE_TLM_RING_DEVICES})
    add_dependencies(ring_tests tlm_${_dev})
  endforeach()
endif()
set(_tlm_env SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1)
# The examples as tests: the default shape on the default device, a small device's limits.
if("normcore" IN_LIST NORMCORE_TLM_DEVICES)
  add_test(NAME tlm.sc_main.normcore COMMAND tlm_sc_main_normcore)
  add_test(NAME tlm.sc_main.normcore_nhwc
           COMMAND tlm_sc_main_normcore --n 3 --c 37 --hw 211 --nhwc --seed 5 --latency 40)
  set_tests_properties(tlm.sc_main.normcore tlm.sc_main.normcore_nhwc PROPERTIES
                       LABELS tlm TIMEOUT 300 ENVIRONMENT ${_tlm_env} FAIL_REGULAR_EXPRESSION "FAIL")
endif()
if("nc_small" IN_LIST NORMCORE_TLM_DEVICES)
  add_test(NAME tlm.sc_main.nc_small COMMAND tlm_sc_main_nc_small --n 40 --c 5 --hw 15 --seed 3)
  set_tests_properties(tlm.sc_main.nc_small PROPERTIES
                       LABELS tlm TIMEOUT 300 ENVIRONMENT ${_tlm_env} FAIL_REGULAR_EXPRESSION "FAIL")
endif()

# The tlm backend through the public device API and the driver (any device built above).
add_executable(tlm_tests ${CMAKE_CURRENT_SOURCE_DIR}/test_tlm.cpp)
target_link_libraries(tlm_tests PRIVATE normcore::runtime nlohmann_json::nlohmann_json
                                        GTest::gtest_main normcore_warnings)
list(JOIN NORMCORE_TLM_DEVICES "," _tlm_devices)
target_include_directories(tlm_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests)  # test_errors.hpp
target_compile_definitions(tlm_tests PRIVATE NC_DEVICES_DIR="${NORMCORE_DEVICES_DIR}"
                                             NC_TLM_DEVICES="${_tlm_devices}")
foreach(_dev ${NORMCORE_TLM_DEVICES})
  add_dependencies(tlm_tests tlm_${_dev})
  if(NORMCORE_SIM_BACKEND)
    add_dependencies(tlm_tests sim_${_dev})  # sim: the speed comparison
  endif()
endforeach()
gtest_discover_tests(tlm_tests DISCOVERY_TIMEOUT 60
                     PROPERTIES LABELS tlm TIMEOUT 300 ENVIRONMENT ${_tlm_env})

# The module itself (TLM response statuses at the sockets, DMA bursts, latency) on the default
# device: its own sc_main runs GoogleTest.
if("normcore" IN_LIST NORMCORE_TLM_DEVICES)
  add_executable(tlm_bridge_tests ${CMAKE_CURRENT_SOURCE_DIR}/test_tlm.cpp)
  target_link_libraries(tlm_bridge_tests PRIVATE normcore_tlm_model_normcore normcore::runtime
                                                 GTest::gtest normcore_warnings)
  target_include_directories(tlm_bridge_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests)  # test_errors.hpp
  target_compile_definitions(tlm_bridge_tests PRIVATE NC_TLM_BRIDGE_TESTS=1
                                                      NC_DEVICES_DIR="${NORMCORE_DEVICES_DIR}")
  set_target_properties(tlm_bridge_tests PROPERTIES
                        LINK_DEPENDS "${NORMCORE_DEVICES_DIR}/normcore/obj_sc/Vnormcore__ALL.a")
  gtest_discover_tests(tlm_bridge_tests DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS tlm TIMEOUT 300 ENVIRONMENT ${_tlm_env})
endif()
