# Co-simulation of generated accelerators (<name>_top): for each configuration
#   normcore gen --accel -> build/sim/accel_<name>/rtl ; verilator build of test_accel.cpp
#   ctest: cosim_accel.<name> (GoogleTest) and rtl_accel.<name> (lint, Yosys, Icarus compile)
# normcore_accel_cosim(<name> LANES n XW n YW n SW n BW n MAXC n HWW n PIPE n BUS n ADDR n
#                      MB n OUT n [IN_UNSIGNED] [OUT_UNSIGNED] [SEED n]
#                      [FIXED_SHIFT n] [FIXED_ROUND mode] [FIXED_LAYOUT layout] [LDC]
#                      [TABLE banked|copies] [IN_TYPE fp16|bf16 OUT_TYPE fp16|bf16|fp32 [FLUSH]])
set(NORMCORE_ACCEL_JOBS 100 CACHE STRING "Random jobs per accelerator configuration")
function(normcore_accel_cosim name)
  cmake_parse_arguments(A "IN_UNSIGNED;OUT_UNSIGNED;SYNTH;LDC;FLUSH;COVERAGE;RING"
                        "LANES;XW;YW;SW;BW;MAXC;HWW;PIPE;BUS;ADDR;MB;OUT;SEED;FIXED_SHIFT;FIXED_ROUND;FIXED_LAYOUT;TABLE;IN_TYPE;OUT_TYPE"
                        "" ${ARGN})
  if(NOT A_SEED)
    set(A_SEED 1)
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/accel_${name})
  set(prefix nc_${name})
  set(gen_args --accel --name ${prefix} --lanes ${A_LANES} --in-bits ${A_XW} --out-bits ${A_YW}
               --scale-bits ${A_SW} --offset-bits ${A_BW} --max-channels ${A_MAXC}
               --inner-bits ${A_HWW} --pipeline ${A_PIPE} --bus-bits ${A_BUS}
               --addr-bits ${A_ADDR} --max-burst ${A_MB} --outstanding ${A_OUT})
  set(xs 1)
  set(ys 1)
  if(A_IN_UNSIGNED)
    list(APPEND gen_args --in-unsigned)
    set(xs 0)
  endif()
  if(A_OUT_UNSIGNED)
    list(APPEND gen_args --out-unsigned)
    set(ys 0)
  endif()
  set(spec_defs)
  normcore_spec_args(gen_args spec_defs ${ARGN})
  set(ring 0)
  if(A_RING)
    list(APPEND gen_args --ring)
    set(ring 1)
  endif()
  set(vfiles)
  foreach(m bank step chan ptable lane fifo core rfifo wfifo pgear igear skid ogear rdma wdma_lenq
            wdma_adrq wdma ctrl regs top)
    list(APPEND vfiles ${dir}/rtl/${prefix}_${m}.v)
  endforeach()
  add_custom_command(
    OUTPUT ${vfiles} ${dir}/rtl/manifest.json ${dir}/rtl/filelist.f ${dir}/rtl/${prefix}_regs.hpp
    COMMAND $<TARGET_FILE:normcore_gen_tool> gen ${gen_args} -o ${dir}/rtl
    DEPENDS normcore_gen_tool
    COMMENT "normcore gen --accel ${name}" VERBATIM)
  file(WRITE ${dir}/inc/accel_regs.hpp
       "#pragma once\n#include \"${prefix}_regs.hpp\"\nnamespace accel_regs = ${prefix}_regs;\n")
  set(defs -I${dir}/rtl -I${dir}/inc -DNC_NAME=${name} -DNC_LANES=${A_LANES} -DNC_XW=${A_XW}
           -DNC_XS=${xs} -DNC_YW=${A_YW} -DNC_YS=${ys} -DNC_SW=${A_SW} -DNC_BW=${A_BW}
           -DNC_MAXC=${A_MAXC} -DNC_HWW=${A_HWW} -DNC_PIPE=${A_PIPE} -DNC_BUS=${A_BUS}
           -DNC_ADDR=${A_ADDR} -DNC_SEED=${A_SEED} -DNC_JOBS=${NORMCORE_ACCEL_JOBS} -DNC_RING=${ring}
           ${spec_defs})
  set(exe ${dir}/obj/cosim_accel_${name})
  set(srcs "${CMAKE_CURRENT_SOURCE_DIR}/test_accel.cpp;${PROJECT_SOURCE_DIR}/model/src/contract.cpp;${PROJECT_SOURCE_DIR}/model/src/float_contract.cpp")
  set(deps "${dir}/rtl/${prefix}_regs.hpp;${CMAKE_CURRENT_SOURCE_DIR}/accel_driver.hpp;${CMAKE_CURRENT_SOURCE_DIR}/float_jobs.hpp;${CMAKE_CURRENT_SOURCE_DIR}/ring_bench.hpp;${CMAKE_CURRENT_SOURCE_DIR}/axi_mem.hpp;${CMAKE_CURRENT_SOURCE_DIR}/axil_master.hpp")
  normcore_verilate_program(${exe} ${prefix}_top "${vfiles}" "${defs}" "${srcs}" "-lgtest -pthread"
                            "${deps}")
  add_custom_target(cosim_accel_${name} ALL DEPENDS ${exe})
  add_test(NAME cosim_accel.${name} COMMAND ${exe})
  set_tests_properties(cosim_accel.${name} PROPERTIES LABELS "cosim;accel" TIMEOUT 1200)
  if(A_COVERAGE OR NORMCORE_COVERAGE_ALL)
    set(cexe ${dir}/obj_cov/cosim_accel_${name}_cov)
    normcore_verilate_program(${cexe} ${prefix}_top "${vfiles}" "${defs}" "${srcs}"
                              "-lgtest -pthread" "${deps}" ${NORMCORE_COVERAGE_FLAGS})
    normcore_coverage_run(accel_${name} ${dir} ${cexe})
  endif()
  set(synth)
  if(A_SYNTH)
    set(synth --synth)
  endif()
  add_test(NAME rtl_accel.${name}
           COMMAND ${BASH_EXE} ${PROJECT_SOURCE_DIR}/scripts/check_rtl.sh ${dir}/rtl ${prefix}_top
                   $<TARGET_FILE:smoke_vectors> ${synth})
  set_tests_properties(rtl_accel.${name} PROPERTIES LABELS "rtl;accel" TIMEOUT 1200)
endfunction()

# Bus widths 32..512, lanes 1..32, odd element widths, 32- and 64-bit addresses.
normcore_accel_cosim(b32_l1   LANES 1  XW 8  YW 8  SW 16 BW 32 MAXC 256 HWW 16 PIPE 3 BUS 32
                     ADDR 32 MB 16 OUT 4 SEED 31)
normcore_accel_cosim(b64_l8   LANES 8  XW 8  YW 8  SW 16 BW 32 MAXC 1024 HWW 24 PIPE 3 BUS 64
                     ADDR 32 MB 32 OUT 8 SEED 32 COVERAGE)
# The default device's accelerator with the descriptor ring (issue 19): every test above on the
# ring RTL's START path, and `--bench` adds the many-small-jobs table on the ring.
normcore_accel_cosim(b64_l8_ring LANES 8 XW 8 YW 8 SW 16 BW 32 MAXC 1024 HWW 24 PIPE 3 BUS 64
                     ADDR 32 MB 32 OUT 8 SEED 32 RING)
normcore_accel_cosim(b128_l3  LANES 3  XW 4  YW 12 SW 10 BW 20 MAXC 100 HWW 12 PIPE 4 BUS 128
                     ADDR 40 MB 8 OUT 4 SEED 33 IN_UNSIGNED)
normcore_accel_cosim(b256_l16 LANES 16 XW 16 YW 8  SW 18 BW 40 MAXC 300 HWW 16 PIPE 5 BUS 256
                     ADDR 64 MB 32 OUT 8 SEED 34)
normcore_accel_cosim(b64_l32  LANES 32 XW 8  YW 8  SW 16 BW 32 MAXC 128 HWW 16 PIPE 3 BUS 64
                     ADDR 32 MB 32 OUT 8 SEED 35)
normcore_accel_cosim(b512_l5  LANES 5  XW 6  YW 10 SW 8  BW 16 MAXC 7 HWW 8 PIPE 6 BUS 512
                     ADDR 32 MB 4 OUT 4 SEED 36 OUT_UNSIGNED)
# Throughput configurations of scripts/bench_accel.sh: LANES not dividing the elements per bus
# word, the bus or the output width the limit.
normcore_accel_cosim(b32_l3   LANES 3  XW 8  YW 8  SW 16 BW 32 MAXC 1024 HWW 24 PIPE 3 BUS 32
                     ADDR 32 MB 32 OUT 8 SEED 37)
normcore_accel_cosim(b128_l5  LANES 5  XW 12 YW 4  SW 16 BW 32 MAXC 1024 HWW 24 PIPE 3 BUS 128
                     ADDR 32 MB 32 OUT 8 SEED 38)
normcore_accel_cosim(b128_l6  LANES 6  XW 16 YW 16 SW 16 BW 32 MAXC 1024 HWW 24 PIPE 3 BUS 128
                     ADDR 32 MB 32 OUT 8 SEED 39)
normcore_accel_cosim(b64_l7   LANES 7  XW 12 YW 10 SW 16 BW 32 MAXC 1024 HWW 24 PIPE 3 BUS 64
                     ADDR 32 MB 32 OUT 8 SEED 40)
normcore_accel_cosim(b32_l4   LANES 4  XW 6  YW 12 SW 12 BW 24 MAXC 512 HWW 24 PIPE 4 BUS 32
                     ADDR 32 MB 32 OUT 8 SEED 41 OUT_UNSIGNED)
# Specialised: R, rounding and layout fixed, C a multiple of the lanes (ERR_UNSUPPORTED otherwise).
normcore_accel_cosim(b64_l4_spec LANES 4 XW 8 YW 8 SW 16 BW 32 MAXC 256 HWW 16 PIPE 3 BUS 64
                     ADDR 32 MB 16 OUT 4 SEED 42 FIXED_SHIFT 14 FIXED_ROUND half_even
                     FIXED_LAYOUT nhwc LDC)
# The per-lane table copies (--table copies) behind the accelerator's parameter path.
normcore_accel_cosim(b64_l4_cp LANES 4 XW 8 YW 8 SW 16 BW 32 MAXC 512 HWW 16 PIPE 3 BUS 64
                     ADDR 32 MB 16 OUT 4 SEED 43 TABLE copies)
normcore_accel_cosim(b32_l3_cp LANES 3 XW 8 YW 8 SW 16 BW 32 MAXC 20 HWW 12 PIPE 4 BUS 32
                     ADDR 32 MB 16 OUT 4 SEED 44 TABLE copies)
# Float accelerators (contract v2, issue 18): the float lane behind the DMA and gearboxes
# carrying 16-bit elements, fp32 s and b in 8-byte {b, s} entries; patterns (no signedness).
normcore_accel_cosim(fa_b64_l2_h_h LANES 2 XW 16 YW 16 SW 32 BW 32 MAXC 64 HWW 12 PIPE 3 BUS 64
                     ADDR 32 MB 16 OUT 4 SEED 45 IN_UNSIGNED OUT_UNSIGNED
                     IN_TYPE fp16 OUT_TYPE fp16)
normcore_accel_cosim(fa_b32_l3_b_b_fl LANES 3 XW 16 YW 16 SW 32 BW 32 MAXC 40 HWW 12 PIPE 3
                     BUS 32 ADDR 32 MB 16 OUT 4 SEED 46 IN_UNSIGNED OUT_UNSIGNED
                     IN_TYPE bf16 OUT_TYPE bf16 FLUSH)
normcore_accel_cosim(fa_b128_l3_b_f LANES 3 XW 16 YW 32 SW 32 BW 32 MAXC 100 HWW 12 PIPE 3
                     BUS 128 ADDR 32 MB 16 OUT 4 SEED 47 IN_UNSIGNED OUT_UNSIGNED
                     IN_TYPE bf16 OUT_TYPE fp32)
# Float in, int8 out (the float lane's integer back end, the job's rounding mode).
normcore_accel_cosim(fa_b64_l2_h_i8 LANES 2 XW 16 YW 8 SW 32 BW 32 MAXC 64 HWW 12 PIPE 3 BUS 64
                     ADDR 32 MB 16 OUT 4 SEED 49 IN_UNSIGNED IN_TYPE fp16 OUT_TYPE int)
# Float, specialised (NHWC, C a multiple of the lanes) and with the per-lane table copies.
normcore_accel_cosim(fa_b64_l4_h_b_spec LANES 4 XW 16 YW 16 SW 32 BW 32 MAXC 64 HWW 12 PIPE 3
                     BUS 64 ADDR 32 MB 16 OUT 4 SEED 48 IN_UNSIGNED OUT_UNSIGNED
                     IN_TYPE fp16 OUT_TYPE bf16 FIXED_LAYOUT nhwc LDC)
normcore_accel_cosim(fa_b64_l4_b_h_cp LANES 4 XW 16 YW 16 SW 32 BW 32 MAXC 30 HWW 12 PIPE 3
                     BUS 64 ADDR 32 MB 16 OUT 4 SEED 49 IN_UNSIGNED OUT_UNSIGNED
                     IN_TYPE bf16 OUT_TYPE fp16 TABLE copies)
