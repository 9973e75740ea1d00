// Accelerator configurations the generator tests share: pinned (every field explicit), the
// smallest, the widest, and one of odd sizes.
#pragma once

#include <string>
#include <vector>

#include "normcore/gen/accel.hpp"

namespace normcore::gen::test_configs {

// Every field set explicitly (today's defaults with bursts of 16), so that golden values do not
// move when a default changes.
inline AccelConfig pinned_config() {
  AccelConfig a;
  a.core.name = std::string("normcore");
  a.core.lanes = 8;
  a.core.arith = {8, true, 16, 32, 8, true};
  a.core.max_channels = 1024;
  a.core.inner_bits = 24;
  a.core.pipeline = 3;
  a.bus_bits = 64;
  a.addr_bits = 32;
  a.id_bits = 4;
  a.max_burst = 16;
  a.outstanding = 8;
  a.axil_addr_bits = 12;
  return a;
}

inline AccelConfig small_config() {
  AccelConfig a;
  a.core.name = std::string("ncs");
  a.core.lanes = 1;
  a.core.arith = {2, false, 2, 2, 2, false};
  a.core.max_channels = 1;
  a.core.inner_bits = 1;
  a.bus_bits = 32;
  a.max_burst = 1;
  a.outstanding = 1;
  a.axil_addr_bits = 8;
  return a;
}

inline AccelConfig big_config() {
  AccelConfig a;
  a.core.name = std::string("ncb");
  a.core.lanes = 64;
  a.core.arith = {32, true, 31, 62, 32, true};
  a.core.max_channels = 65536;
  a.core.inner_bits = 32;
  a.bus_bits = 512;
  a.addr_bits = 64;
  a.max_burst = 8;
  a.outstanding = 16;
  a.axil_addr_bits = 16;
  return a;
}

inline AccelConfig odd_config() {  // unsigned output, narrow inner size, odd sizes
  AccelConfig a;
  a.core.name = std::string("nco");
  a.core.lanes = 5;
  a.core.arith = {6, true, 8, 16, 10, false};
  a.core.max_channels = 7;
  a.core.inner_bits = 6;
  a.bus_bits = 128;
  a.max_burst = 16;
  a.outstanding = 3;
  return a;
}

inline std::vector<AccelConfig> configs() {
  return {AccelConfig{}, pinned_config(), small_config(), big_config(), odd_config()};
}

}  // namespace normcore::gen::test_configs
