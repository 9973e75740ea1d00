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
