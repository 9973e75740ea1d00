// The descriptor ring's scenarios (ring_scenarios.hpp) on ref: (nc_ring and nc_wide_ring); the
// sim: and tlm: devices run the same ones in ring_tests (sim/test_ring.cpp).
#include "ring_scenarios.hpp"
#include "test_paths.hpp"

namespace normcore::test::ring {

std::string manifest_path(const std::string& device_name) {
  return devices_dir() + "/" + device_name + "/rtl/manifest.json";
}
bool tlm_built() {
  return false;
}

namespace {

INSTANTIATE_TEST_SUITE_P(Backends, Ring, ::testing::Values("ref", "ref_wide"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace normcore::test::ring
