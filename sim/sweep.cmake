# The swept configurations: lanes 1..64, XW 4..16, YW narrower and wider than XW, signed and
# unsigned, every pipeline depth (3..11), tiny and large channel tables. Every one runs the random
# co-simulation (all rounding modes, ReLU and other clamps, both layouts, random stalls) and
# the RTL checks (lint, the quick Yosys check, Icarus). l4_x8_y4 is generated with --target xilinx
# (Vivado attributes in the RTL). SYNTH: a full Yosys synth as well, on three configurations (one
# lane, the xilinx one, the default); the others take the seconds-long structural check only.
normcore_cosim(l1_x8_y8     LANES 1  XW 8  YW 8  SW 16 BW 32 MAXC 64   HWW 12 PIPE 3 SEED 11
               SYNTH)
normcore_cosim(l3_x4_y8_u   LANES 3  XW 4  YW 8  SW 10 BW 20 MAXC 37   HWW 8  PIPE 7 SEED 12
               IN_UNSIGNED)
normcore_cosim(l4_x8_y4     LANES 4  XW 8  YW 4  SW 12 BW 24 MAXC 100  HWW 10 PIPE 4 SEED 13
               TARGET xilinx SYNTH)
normcore_cosim(l8_x8_y8     LANES 8  XW 8  YW 8  SW 16 BW 32 MAXC 1024 HWW 24 PIPE 3 SEED 14
               SYNTH COVERAGE)
normcore_cosim(l8_x8_u8_uu  LANES 8  XW 8  YW 8  SW 16 BW 32 MAXC 256  HWW 16 PIPE 5 SEED 15
               IN_UNSIGNED OUT_UNSIGNED)
normcore_cosim(l16_x16_y8   LANES 16 XW 16 YW 8  SW 18 BW 40 MAXC 512  HWW 16 PIPE 6 SEED 16)
normcore_cosim(l16_x12_y16  LANES 16 XW 12 YW 16 SW 16 BW 36 MAXC 64   HWW 12 PIPE 7 SEED 17)
normcore_cosim(l32_x8_y8    LANES 32 XW 8  YW 8  SW 16 BW 32 MAXC 128  HWW 16 PIPE 4 SEED 18)
normcore_cosim(l5_x6_y10_u  LANES 5  XW 6  YW 10 SW 8  BW 16 MAXC 7    HWW 6  PIPE 8 SEED 19
               OUT_UNSIGNED)
normcore_cosim(l64_x4_y4    LANES 64 XW 4  YW 4  SW 8  BW 14 MAXC 96   HWW 8  PIPE 3 SEED 20)
normcore_cosim(l2_x16_y16   LANES 2  XW 16 YW 16 SW 24 BW 44 MAXC 2048 HWW 20 PIPE 8 SEED 21)
# Float cores (contract v2, issue 18: the float lane of gen/src/core_flane.cpp): fp16 and bf16
# inputs, every float output, 1, 2, 3, 8 and 16 lanes, flush on one, the per-lane table copies (4 table
# stages) on --target ice40; signedness does not apply (patterns).
normcore_cosim(f1_h_h       LANES 1  XW 16 YW 16 SW 32 BW 32 MAXC 64   HWW 12 PIPE 3 SEED 41
               IN_UNSIGNED OUT_UNSIGNED IN_TYPE fp16 OUT_TYPE fp16)
normcore_cosim(f3_b_b_fl    LANES 3  XW 16 YW 16 SW 32 BW 32 MAXC 37   HWW 8  PIPE 3 SEED 42
               IN_UNSIGNED OUT_UNSIGNED IN_TYPE bf16 OUT_TYPE bf16 FLUSH)
normcore_cosim(f3_h_f       LANES 3  XW 16 YW 32 SW 32 BW 32 MAXC 100  HWW 10 PIPE 3 SEED 43
               IN_UNSIGNED OUT_UNSIGNED IN_TYPE fp16 OUT_TYPE fp32)
normcore_cosim(f1_b_h       LANES 1  XW 16 YW 16 SW 32 BW 32 MAXC 16   HWW 8  PIPE 3 SEED 44
               IN_UNSIGNED OUT_UNSIGNED IN_TYPE bf16 OUT_TYPE fp16)
normcore_cosim(f2_h_b_cp    LANES 2  XW 16 YW 16 SW 32 BW 32 MAXC 24   HWW 8  PIPE 3 SEED 45
               IN_UNSIGNED OUT_UNSIGNED IN_TYPE fp16 OUT_TYPE bf16 TABLE copies TARGET ice40)
normcore_cosim(f8_h_h       LANES 8  XW 16 YW 16 SW 32 BW 32 MAXC 50   HWW 10 PIPE 3 SEED 46
               IN_UNSIGNED OUT_UNSIGNED IN_TYPE fp16 OUT_TYPE fp16)
normcore_cosim(f16_b_f      LANES 16 XW 16 YW 32 SW 32 BW 32 MAXC 70   HWW 10 PIPE 3 SEED 47
               IN_UNSIGNED OUT_UNSIGNED IN_TYPE bf16 OUT_TYPE fp32)
# fp16 in, int8 out (BN + quantise in one pass: the float lane's integer back end, the job's
# rounding mode and integer clamp).
normcore_cosim(f2_h_i8      LANES 2  XW 16 YW 8  SW 32 BW 32 MAXC 40   HWW 10 PIPE 3 SEED 48
               IN_UNSIGNED IN_TYPE fp16 OUT_TYPE int)
normcore_cosim(f3_b_u16     LANES 3  XW 16 YW 16 SW 32 BW 32 MAXC 33   HWW 9  PIPE 3 SEED 49
               IN_UNSIGNED OUT_UNSIGNED IN_TYPE bf16 OUT_TYPE int)
# Specialised cores (normcore gen --fixed-shift/--fixed-rounding/--fixed-layout/
# --lanes-divide-channels): the same random jobs made to fit, plus the jobs each one rejects.
normcore_cosim(l4_spec_all  LANES 4  XW 8  YW 8  SW 16 BW 32 MAXC 512  HWW 16 PIPE 3 SEED 22
               FIXED_SHIFT 14 FIXED_ROUND half_even FIXED_LAYOUT nhwc LDC SYNTH)
normcore_cosim(l3_spec_r0   LANES 3  XW 6  YW 8  SW 10 BW 20 MAXC 45   HWW 8  PIPE 5 SEED 23
               FIXED_SHIFT 0 FIXED_ROUND floor LDC)
normcore_cosim(l8_spec_nchw LANES 8  XW 8  YW 8  SW 16 BW 32 MAXC 256  HWW 12 PIPE 8 SEED 24
               FIXED_LAYOUT nchw FIXED_ROUND half_away)
normcore_cosim(l6_spec_ldc  LANES 6  XW 8  YW 4  SW 12 BW 24 MAXC 100  HWW 10 PIPE 4 SEED 25
               LDC FIXED_SHIFT 25)
# The direct parameter table (NHWC, C a multiple of a power-of-two LANES: no crossbar, no copies)
# at another width and depth than l4_spec_all's.
normcore_cosim(l8_spec_dir  LANES 8  XW 8  YW 8  SW 16 BW 32 MAXC 64   HWW 12 PIPE 4 SEED 28
               FIXED_LAYOUT nhwc LDC)
# Pipeline 11 (the product registered before the add, --target ecp5's default): the int8 core of
# the PPA runs, and unsigned input with a product wider than b (the DSP's add is W = XW+SW bits).
normcore_cosim(l4_x8_y8_e5  LANES 4  XW 8  YW 8  SW 16 BW 32 MAXC 512  HWW 24 PIPE 11 SEED 26
               TARGET ecp5)
# --target ecp5 at pipeline 11 instantiates MULT18X18D (with its input and output registers) under
# `ifdef SYNTHESIS, and the co-simulation sees the behavioural branch: rtl.ecp5_dsp.* simulates the
# instantiated branch in Icarus against the golden model (a MULT18X18D model) and checks Yosys's
# netlist for the DSP's registers (tests/gen/ecp5_dsp.sh); l2_x17_e5 has A and B at 18 bits.
normcore_cosim(l2_x17_e5    LANES 2  XW 17 YW 8  SW 18 BW 24 MAXC 40   HWW 10 PIPE 11 SEED 29
               TARGET ecp5 IN_UNSIGNED)
# --target ecp5 at a short pipeline: the output buffer's head register in front of a shallow RAM
# (9 beats, the RAM 8) under the same random back-pressure.
normcore_cosim(l3_x8_y6_e5p4 LANES 3  XW 8  YW 6  SW 12 BW 20 MAXC 30   HWW 10 PIPE 4 SEED 41
               TARGET ecp5)
# --target ecp5's position tracker (LUT compare of lo, g_i as two registers, the high part's
# borrow enables as registers pbz_k) at 5 lanes and a 20-bit HW (four high-part segments).
normcore_cosim(l5_x8_y8_e5p6 LANES 5  XW 8  YW 8  SW 16 BW 32 MAXC 100  HWW 20 PIPE 6 SEED 43
               TARGET ecp5)
# --target ecp5 at 8 int8 lanes (core::e5_wide: c0 on bits_for(MAXC - 1) bits, ct_q's own sign,
# le2_q, the copies' t1 address from t0's low sums lo_i_q / ch1_q): a power-of-two MAXC (c0 one
# bit narrower than the channel count) and one that is not.
normcore_cosim(l8_x8_y8_e5w LANES 8  XW 8  YW 8  SW 16 BW 32 MAXC 512  HWW 16 PIPE 11 SEED 50
               TARGET ecp5)
normcore_cosim(l8_x8_y8_e5w200 LANES 8 XW 8 YW 8 SW 16 BW 32 MAXC 200 HWW 14 PIPE 11 SEED 51
               TARGET ecp5)
foreach(_e5 l4_x8_y8_e5 l2_x17_e5)
  add_test(NAME rtl.ecp5_dsp.${_e5}
           COMMAND ${BASH_EXE} ${PROJECT_SOURCE_DIR}/tests/gen/ecp5_dsp.sh
                   ${CMAKE_CURRENT_BINARY_DIR}/${_e5}/rtl nc_${_e5}_core $<TARGET_FILE:smoke_vectors>)
  set_tests_properties(rtl.ecp5_dsp.${_e5} PROPERTIES LABELS "rtl" TIMEOUT 300)
endforeach()
# Pipeline 9 (the accumulator registered in the fabric after the DSP) and 10 (the shifter in
# three parts, --target ice40's default: the PPA's int8 core), 11 without --target ecp5 (the
# product register in the fabric), and narrower accumulators (the three parts' select widths 1..2).
# XW 2 / SW 2 / BW 4 (aw 5, an empty first shifter part) at pipeline 10: the narrowest widths.
normcore_cosim(l2_x2_s2_b4_p10 LANES 2 XW 2 YW 2 SW 2 BW 4 MAXC 8 HWW 6 PIPE 10 SEED 35)
normcore_cosim(l3_x12_y6_u9 LANES 3  XW 12 YW 6  SW 14 BW 20 MAXC 45   HWW 10 PIPE 9 SEED 27
               IN_UNSIGNED)
normcore_cosim(l4_x8_y8_i40 LANES 4  XW 8  YW 8  SW 16 BW 32 MAXC 512  HWW 24 PIPE 10 SEED 33
               TARGET ice40 COVERAGE)
# --target ice40 with an unsigned output (the lanes' clamp select written into the output buffer's
# RAM a cycle early, as in l4_x8_y8_i40, with the unsigned bounds).
normcore_cosim(l3_x8_u8_i40 LANES 3  XW 8  YW 8  SW 16 BW 32 MAXC 60   HWW 12 PIPE 10 SEED 37
               OUT_UNSIGNED TARGET ice40)
# --target ice40 below pipeline 8 (the early write from lane_clamp, not lane_clamp_sat), at 3
# output bits (no nlo_i: loe_q) and at 8 (nlo_i)
normcore_cosim(l3_x6_y3_i40p3 LANES 3 XW 6  YW 3  SW 8  BW 16 MAXC 20   HWW 8  PIPE 3 SEED 39
               TARGET ice40)
normcore_cosim(l4_x8_y8_i40p6 LANES 4 XW 8  YW 8  SW 16 BW 32 MAXC 64   HWW 10 PIPE 6 SEED 40
               TARGET ice40)
normcore_cosim(l3_x5_y4_p11 LANES 3  XW 5  YW 4  SW 6  BW 12 MAXC 20   HWW 8  PIPE 11 SEED 34)
normcore_cosim(l5_x16_y8_p10 LANES 5 XW 16 YW 8  SW 18 BW 44 MAXC 64   HWW 12 PIPE 10 SEED 36
               OUT_UNSIGNED)
# The PPA's specialised core (scripts/ppa.py core_l4_spec: --target ice40, pipeline 10): fixed R
# with the shifter in parts (its tests registered in groups), the clamp's two compares of q + inc.
normcore_cosim(l4_spec_ice40 LANES 4 XW 8  YW 8  SW 16 BW 32 MAXC 512  HWW 16 PIPE 10 SEED 29
               FIXED_SHIFT 8 FIXED_ROUND half_even FIXED_LAYOUT nhwc LDC TARGET ice40)
# The per-lane table copies (--table copies: every lane reads its own C-word RAM at
# (c0 + d_i) mod C, no crossbar): the int8 core of the PPA runs (generic target, pipeline 3),
# --target ice40's default (copies without --table) at an odd lane count, and tables smaller
# than the lanes (every wrap-around case; the RAM then holds L - 1 words).
normcore_cosim(l4_tbl_cp    LANES 4  XW 8  YW 8  SW 16 BW 32 MAXC 512  HWW 16 PIPE 3 SEED 29
               TABLE copies SYNTH)
normcore_cosim(l3_tbl_i40   LANES 3  XW 8  YW 8  SW 16 BW 32 MAXC 100  HWW 12 PIPE 8 SEED 30
               TARGET ice40 TABLE copies)
# --target ice40 copies with C below L and above 2^nb (the loader's per-job k tables, k_table)
normcore_cosim(l5_tbl_i40c12 LANES 5 XW 6  YW 10 SW 8  BW 16 MAXC 12   HWW 6  PIPE 8 SEED 38
               TARGET ice40 TABLE copies)
normcore_cosim(l5_tbl_cp7   LANES 5  XW 6  YW 10 SW 8  BW 16 MAXC 7    HWW 6  PIPE 4 SEED 31
               TABLE copies)
normcore_cosim(l8_tbl_cp7   LANES 8  XW 8  YW 8  SW 16 BW 32 MAXC 7    HWW 8  PIPE 5 SEED 32
               TABLE copies FIXED_LAYOUT nchw)
