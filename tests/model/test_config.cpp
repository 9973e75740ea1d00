// The one configuration schema (model/include/normcore/config.hpp): ranges, JSON round trip,
// unknown and missing keys, messages naming the CLI option or the JSON key.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "normcore/config.hpp"

using normcore::AccelConfig;
using normcore::config_field;
using normcore::config_schema;
using normcore::CoreConfig;
using normcore::FieldNames;

TEST(ConfigSchema, EveryFieldOnce) {
  std::set<std::string> keys, options;
  for (const auto& f : config_schema()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    EXPECT_TRUE(options.insert(f.option).second) << f.option;
    const int refs = (f.int_ref != nullptr) + (f.bool_ref != nullptr) + (f.str_ref != nullptr);
    EXPECT_EQ(refs, 1) << f.key;
  }
  // Every key the config JSON holds is in the schema, and only those.
  const auto j = AccelConfig{}.to_json();
  EXPECT_EQ(j.size(), keys.size());
  for (const auto& [k, v] : j.items()) EXPECT_EQ(keys.count(k), 1u) << k;
}

TEST(ConfigSchema, RangesComeFromTheTable) {
  for (const auto& f : config_schema()) {
    if (f.kind != normcore::ConfigField::Kind::integer) continue;
    AccelConfig a;
    *f.int_ref(a) = static_cast<int>(f.lo - 1);
    EXPECT_NE(a.check().find(std::string(f.option) + ": "), std::string::npos) << f.key;
    EXPECT_NE(a.check(FieldNames::json).find("'" + std::string(f.key) + "': "), std::string::npos)
        << f.key;
    *f.int_ref(a) = static_cast<int>(f.hi + 1);
    EXPECT_NE(a.check().find(f.option), std::string::npos) << f.key;
  }
  EXPECT_EQ(config_field("lanes").check(65), "--lanes: 65 is out of range 1..64");
  EXPECT_EQ(config_field("bus_bits").check(48), "--bus-bits: 48 must be 32, 64, 128, 256 or 512");
  EXPECT_EQ(config_field("max_burst").check(3, FieldNames::json),
            "'max_burst': 3 must be a power of two in 1..256");
  EXPECT_EQ(config_field("pipeline").check(3), "");
  EXPECT_EQ(config_field("lanes").help_text(), "Elements per beat (1..64)");
  EXPECT_EQ(config_field("bus_bits").help_text(),
            "Accelerator: AXI4 data width (power of two, 32..512)");
  EXPECT_THROW((void)config_field("lanse"), std::logic_error);
}

TEST(ConfigSchema, JsonRoundTrip) {
  AccelConfig a;
  a.core.name = "acc";
  a.core.lanes = 3;
  a.core.arith.x_signed = false;
  a.core.arith.yw = 12;
  a.core.target = "ice40";
  a.core.pipeline = 8;
  a.bus_bits = 128;
  a.outstanding = 2;
  const auto b = AccelConfig::from_json(a.to_json(), true);
  EXPECT_EQ(b.to_json(), a.to_json());
  EXPECT_EQ(b.core.lanes, 3);
  EXPECT_FALSE(b.core.arith.x_signed);
  EXPECT_EQ(b.bus_bits, 128);
  // A core config leaves the accelerator keys out; reading it keeps their defaults.
  EXPECT_FALSE(a.core.to_json().contains("bus_bits"));
  EXPECT_EQ(AccelConfig::from_json(a.core.to_json()).bus_bits, 64);
}

TEST(ConfigSchema, RejectsUnknownMistypedAndMissingKeys) {
  auto what = [](const nlohmann::json& j, bool all = false) {
    try {
      (void)AccelConfig::from_json(j, all);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(what({{"lanse", 8}}), "config: unknown key 'lanse'");
  EXPECT_EQ(what({{"lanes", "eight"}}), "config: 'lanes' must be an integer");
  EXPECT_EQ(what({{"in_signed", 1}}), "config: 'in_signed' must be true or false");
  EXPECT_EQ(what({{"target", 3}}), "config: 'target' must be a string");
  EXPECT_EQ(what({{"lanes", 1LL << 40}}).find("'lanes': "), 0u);
  EXPECT_EQ(what(nlohmann::json::array()), "config must be a JSON object");
  EXPECT_EQ(what({{"lanes", 8}}), "accepted");
  EXPECT_EQ(what({{"lanes", 8}}, true), "config: 'name' is missing");
  auto full = AccelConfig{}.to_json();
  full.erase("target");  // manifests from before --target read as generic
  EXPECT_EQ(what(full, true), "accepted");
  EXPECT_THROW((void)CoreConfig::from_json({{"lanse", 8}}), std::invalid_argument);
}

TEST(ConfigSchema, WholeConfigChecks) {
  CoreConfig c;
  c.name = "9x";
  EXPECT_EQ(c.check(), "--name: '9x' is not a Verilog identifier");
  c.name = "ok";
  c.target = "gowin";
  EXPECT_EQ(c.check(FieldNames::json),
            "'target': must be generic, ice40, ecp5, xilinx or asic (got 'gowin')");
  c.target = "generic";
  c.arith.xw = 32;
  c.arith.sw = 32;
  EXPECT_NE(c.check().find("exceeds 64"), std::string::npos);
  AccelConfig a;
  a.bus_bits = 512;
  a.max_burst = 128;
  EXPECT_EQ(a.check(), "--max-burst: 128 beats of 64 bytes exceed 4 KiB");
}
