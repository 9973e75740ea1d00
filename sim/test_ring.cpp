// The descriptor ring's scenarios (tests/runtime/ring_scenarios.hpp) on sim: (the Verilated RTL:
// nc_ring at latency 16 with 5 % stalls, nc_ring at latency 40 with 30 % stalls, nc_wide_ring)
// and tlm: (the SystemC model of the same RTL); runtime_tests runs the same scenarios on ref:.
#include "ring_scenarios.hpp"

namespace normcore::test::ring {

std::string manifest_path(const std::string& device_name) {
  return std::string(NC_DEVICES_DIR) + "/" + device_name + "/rtl/manifest.json";
}
bool tlm_built() {
  return NC_RING_TLM != 0;
}

namespace {

INSTANTIATE_TEST_SUITE_P(Backends, Ring, ::testing::Values("sim", "tlm", "sim_wide", "sim_stall"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace normcore::test::ring
