# Accelerator configurations the runtime is tested and demonstrated on. Each one is generated at
# build time into ${NORMCORE_DEVICES_DIR}/<name>/rtl (manifest.json, Verilog, register header);
# sim/ adds a Verilator plugin (libnormcore_sim.so) beside it when the co-simulation is built.
#   normcore_device(<name> <normcore gen args...>)   ->  target device_<name>
set(NORMCORE_DEVICES_DIR ${PROJECT_BINARY_DIR}/devices)
set(NORMCORE_DEVICES "" CACHE INTERNAL "")
function(normcore_device name)
  set(dir ${NORMCORE_DEVICES_DIR}/${name})
  add_custom_command(
    OUTPUT ${dir}/rtl/manifest.json
    COMMAND $<TARGET_FILE:normcore_gen_tool> gen --accel --name ${name} ${ARGN} -o ${dir}/rtl
    DEPENDS normcore_gen_tool
    COMMENT "normcore gen --accel ${name} (device)" VERBATIM)
  add_custom_target(device_${name} ALL DEPENDS ${dir}/rtl/manifest.json)
  set(NORMCORE_DEVICES ${NORMCORE_DEVICES} ${name} CACHE INTERNAL "")
  set(NORMCORE_DEVICE_ARGS_${name} ${ARGN} CACHE INTERNAL "")
endfunction()

# The default configuration (8 lanes, int8 -> int8, 1024 channels, 64-bit AXI4): the demo's.
normcore_device(normcore)
# A small one so tiling is exercised on small tensors: 5 channels, INNER up to 15, 3 lanes,
# int16 -> uint8, 32-bit bus.
normcore_device(nc_small --lanes 3 --in-bits 16 --out-bits 8 --out-unsigned --max-channels 5
                --inner-bits 4 --bus-bits 32)
# A specialised one (R 10, half_even, NHWC, C a multiple of its 4 lanes): the runtime's and
# ref's rejection of jobs it cannot run, channel groups of whole beats (64 channels).
normcore_device(nc_spec --lanes 4 --max-channels 64 --inner-bits 12 --fixed-shift 10
                --fixed-rounding half_even --fixed-layout nhwc --lanes-divide-channels)

# A device made by `normcore gen --accel` alone (its manifest and RTL), recorded in <list_var>.
function(_normcore_gen_device name list_var what)
  set(dir ${NORMCORE_DEVICES_DIR}/${name})
  add_custom_command(
    OUTPUT ${dir}/rtl/manifest.json
    COMMAND $<TARGET_FILE:normcore_gen_tool> gen --accel --name ${name} ${ARGN} -o ${dir}/rtl
    DEPENDS normcore_gen_tool
    COMMENT "normcore gen --accel ${name} (${what})" VERBATIM)
  add_custom_target(device_${name} ALL DEPENDS ${dir}/rtl/manifest.json)
  set(${list_var} ${${list_var}} ${name} CACHE INTERNAL "")
endfunction()

# Float devices (contract v2, issue 18): sim: and tlm: plugins beside them like the devices
# above, but not in NORMCORE_DEVICES (whose tests compare with the integer golden model);
# tests/cli/cli_float.sh runs one tensor on sim:, tlm: and ref: of each and compares the bytes.
#   normcore_float_device(<name> <normcore gen args...>)  ->  target device_<name>
set(NORMCORE_FLOAT_DEVICES "" CACHE INTERNAL "")
function(normcore_float_device name)
  _normcore_gen_device(${name} NORMCORE_FLOAT_DEVICES "float device" ${ARGN})
endfunction()

# fp16 -> fp16 and bf16 -> bf16, 2 lanes, 64 channels, 64-bit bus.
normcore_float_device(nc_fp16 --lanes 2 --max-channels 64 --in-type fp16 --out-type fp16)
normcore_float_device(nc_bf16 --lanes 2 --max-channels 64 --in-type bf16 --out-type bf16)

# Devices with the descriptor ring (`--ring`, issue 19): sim: and tlm: plugins beside them like
# the devices above, but not in NORMCORE_DEVICES (whose tests would run every START-path test
# again); the ring tests (tests/runtime/test_ref_ring.cpp, test_driver_ring.cpp on ref:;
# sim/test_ring.cpp on ref:, sim: and tlm:) use them.
#   normcore_ring_device(<name> <normcore gen args...>)  ->  target device_<name>
set(NORMCORE_RING_DEVICES "" CACHE INTERNAL "")
function(normcore_ring_device name)
  _normcore_gen_device(${name} NORMCORE_RING_DEVICES "ring device" ${ARGN})
endfunction()

# The default configuration with the ring, and the small one with it (tiles of one tensor).
normcore_ring_device(nc_ring --ring)
normcore_ring_device(nc_small_ring --ring --lanes 3 --in-bits 16 --out-bits 8 --out-unsigned
                     --max-channels 5 --inner-bits 4 --bus-bits 32)
# A 256-bit bus: the status is written as one bus word (bytes 32..63, the descriptor's own
# bytes 32..47 rewritten beside it) and there is no prefetch.
normcore_ring_device(nc_wide_ring --ring --bus-bits 256)
