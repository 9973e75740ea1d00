# ---- Shared generator primitives (gen/src/primitives.cpp) on their own: prims_gen writes the skid
# buffer and FIFO variants; test_skid drives the Verilated skid buffer with random valid/ready;
# prims.rtl lints, Yosys-checks and Icarus-compiles every written module.
add_executable(prims_gen prims_gen.cpp)
target_include_directories(prims_gen PRIVATE ${PROJECT_SOURCE_DIR}/gen/src)
target_link_libraries(prims_gen PRIVATE normcore::gen normcore_warnings)
set(_prims_dir ${CMAKE_CURRENT_BINARY_DIR}/prims)
set(_prims_gen ${_prims_dir}/gen)
set(_prims_v ${_prims_gen}/prim_skid.v ${_prims_gen}/lint/prim_skid1.v
             ${_prims_gen}/lint/prim_fifo_flop.v ${_prims_gen}/lint/prim_fifo_flop_full.v
             ${_prims_gen}/lint/prim_fifo_ram.v ${_prims_gen}/lint/prim_fifo_ram_full.v)
add_custom_command(
  OUTPUT ${_prims_v}
  COMMAND $<TARGET_FILE:prims_gen> ${_prims_gen}
  DEPENDS prims_gen
  COMMENT "prims_gen: primitives for their tests" VERBATIM)
normcore_verilate_program(${_prims_dir}/obj/test_skid prim_skid "${_prims_gen}/prim_skid.v" ""
                          "${CMAKE_CURRENT_SOURCE_DIR}/test_skid.cpp;${CMAKE_CURRENT_SOURCE_DIR}/gtest_main.cpp"
                          "-lgtest -pthread" "")
add_custom_target(test_skid ALL DEPENDS ${_prims_dir}/obj/test_skid ${_prims_v})
add_test(NAME prims.skid COMMAND ${_prims_dir}/obj/test_skid)
set_tests_properties(prims.skid PROPERTIES LABELS "cosim;prims" TIMEOUT 300)
add_test(NAME prims.rtl
         COMMAND ${BASH_EXE} ${PROJECT_SOURCE_DIR}/scripts/lint_modules.sh ${_prims_v})
set_tests_properties(prims.rtl PROPERTIES LABELS "rtl;prims" TIMEOUT 300)

# ---- The float lane (gen/src/core_flane.cpp): flane_gen writes its 24 variants (12 float y,
# 12 integer y: i int8, u uint8, w int16) and flane_all
# (all of them on one input); test_flane runs every 16-bit x through them against apply_float;
# flane.rtl lints, Yosys-checks and Icarus-compiles every variant.
add_executable(flane_gen flane_gen.cpp)
target_include_directories(flane_gen PRIVATE ${PROJECT_SOURCE_DIR}/gen/src)
target_link_libraries(flane_gen PRIVATE normcore::gen normcore_warnings)
set(_flane_dir ${CMAKE_CURRENT_BINARY_DIR}/flane)
set(_flane_gen ${_flane_dir}/gen)
set(_flane_v)
foreach(x h b)
  foreach(y h b f i u w)
    foreach(f 0 1)
      list(APPEND _flane_v ${_flane_gen}/fl_${x}_${y}_${f}.v)
    endforeach()
  endforeach()
endforeach()
add_custom_command(
  OUTPUT ${_flane_v} ${_flane_gen}/top/flane_all.v ${_flane_gen}/flane_shape.h
  COMMAND $<TARGET_FILE:flane_gen> ${_flane_gen}
  DEPENDS flane_gen
  COMMENT "flane_gen: float lanes for their tests" VERBATIM)
normcore_verilate_program(${_flane_dir}/obj/test_flane flane_all
                          "${_flane_gen}/top/flane_all.v;${_flane_v}" "-I${_flane_gen}"
                          "${CMAKE_CURRENT_SOURCE_DIR}/test_flane.cpp;${CMAKE_CURRENT_SOURCE_DIR}/gtest_main.cpp;${PROJECT_SOURCE_DIR}/model/src/float_contract.cpp;${PROJECT_SOURCE_DIR}/model/src/contract.cpp"
                          "-lgtest -pthread" "${_flane_gen}/flane_shape.h")
add_custom_target(test_flane ALL DEPENDS ${_flane_dir}/obj/test_flane ${_flane_v})
add_test(NAME flane.cosim COMMAND ${_flane_dir}/obj/test_flane)
set_tests_properties(flane.cosim PROPERTIES LABELS "cosim;flane" TIMEOUT 900)
add_test(NAME flane.rtl COMMAND ${BASH_EXE} ${PROJECT_SOURCE_DIR}/scripts/lint_modules.sh ${_flane_v})
set_tests_properties(flane.rtl PROPERTIES LABELS "rtl;flane" TIMEOUT 600)
