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
    const int refs = (f.int_ref != nullptr) + (f.bool_ref != nullptr) + (f.str_ref != nullptr) +
                     (f.num_ref != nullptr) + (f.type_ref != nullptr);
    EXPECT_EQ(refs, 1) << f.key;
  }
  // Every key the config JSON holds is in the schema, and only those; a flag written only when
  // set (ring) is missing at its default and present when set.
  std::size_t omitted = 0;
  for (const auto& f : config_schema()) omitted += f.omit_when_false ? 1 : 0;
  EXPECT_EQ(omitted, 1u);
  const auto j = AccelConfig{}.to_json();
  EXPECT_EQ(j.size(), keys.size() - omitted);
  EXPECT_FALSE(j.contains("ring"));
  for (const auto& [k, v] : j.items()) EXPECT_EQ(keys.count(k), 1u) << k;
  AccelConfig r;
  r.ring = true;
  const auto jr = r.to_json();
  EXPECT_EQ(jr.size(), keys.size());
  EXPECT_EQ(jr.at("ring"), true);
  EXPECT_TRUE(AccelConfig::from_json(jr, true).ring);
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
  EXPECT_EQ(c.check(),
            "--name: '9x' must start with a letter (a Verilog, C and SystemRDL identifier)");
  // Issue 15: '_x' passed this check and then failed in the register description (exit 1).
  for (const char* bad : {"_x", "a__b", "a_", "a-b", ""}) {
    c.name = bad;
    EXPECT_NE(c.check(), "") << bad;
  }
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

TEST(ConfigSchema, SpecialisationFields) {
  CoreConfig c;
  EXPECT_FALSE(c.specialised());
  EXPECT_EQ(c.check(), "");
  EXPECT_EQ(config_field("fixed_shift").check(-2), "--fixed-shift: -2 is out of range -1..64");
  // fixed_shift is limited by this config's accumulator (int8 x int16 + int32: 33 bits).
  c.fixed_shift = 33;
  EXPECT_EQ(c.check(), "");
  c.fixed_shift = 34;
  EXPECT_EQ(c.check(FieldNames::json), "'fixed_shift': 34 exceeds the accumulator width (33 bits)");
  c.fixed_shift = 0;
  EXPECT_TRUE(c.specialised());
  c.fixed_rounding = "nearest";
  EXPECT_EQ(c.check(),
            "--fixed-rounding: must be empty, floor, half_up, half_even or half_away "
            "(got 'nearest')");
  c.fixed_rounding = "half_away";
  c.fixed_layout = "NHWC";
  EXPECT_EQ(c.check(FieldNames::json), "'fixed_layout': must be empty, nchw or nhwc (got 'NHWC')");
  c.fixed_layout = "nhwc";
  EXPECT_EQ(c.check(), "");
  c.lanes_divide_channels = true;
  c.lanes = 8;
  c.max_channels = 5;
  EXPECT_EQ(c.check(),
            "--lanes-divide-channels: --max-channels 5 is below --lanes 8, so no channel count "
            "is a multiple of the lanes");
  c.max_channels = 8;
  EXPECT_EQ(c.check(), "");
  EXPECT_EQ(config_field("fixed_layout").help_text(),
            "Specialise: the one layout every job uses (empty = set per job) (nchw|nhwc)");
  // Round trip through JSON, and manifests written before these fields read as "not fixed".
  const auto back = CoreConfig::from_json(c.to_json());
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(back.fixed_shift, 0);
  EXPECT_EQ(back.fixed_rounding, "half_away");
  EXPECT_TRUE(back.lanes_divide_channels);
  auto old = AccelConfig{}.to_json();
  for (const char* k : {"fixed_shift", "fixed_rounding", "fixed_layout", "lanes_divide_channels"})
    old.erase(k);
  const auto a = AccelConfig::from_json(old, true);
  EXPECT_FALSE(a.core.specialised());
  EXPECT_THROW((void)CoreConfig::from_json({{"fixed_shift", "8"}}), std::invalid_argument);
  EXPECT_THROW((void)CoreConfig::from_json({{"lanes_divide_channels", 1}}), std::invalid_argument);
}

TEST(ConfigSchema, JobsAgainstTheSpecialisation) {
  using normcore::Layout;
  using normcore::Rounding;
  CoreConfig c;
  c.lanes = 4;
  EXPECT_EQ(c.check_job(33, Rounding::floor, Layout::nhwc, 7), "");  // nothing fixed
  c.fixed_shift = 8;
  c.fixed_rounding = "half_even";
  c.fixed_layout = "nhwc";
  c.lanes_divide_channels = true;
  EXPECT_EQ(c.check_job(8, Rounding::half_even, Layout::nhwc, 12), "");
  EXPECT_EQ(c.check_job(7, Rounding::half_even, Layout::nhwc, 12),
            "R: 7 differs from this core's fixed shift 8 (fixed_shift)");
  EXPECT_EQ(c.check_job(8, Rounding::floor, Layout::nhwc, 12),
            "rounding: floor differs from this core's fixed rounding half_even (fixed_rounding)");
  EXPECT_EQ(c.check_job(8, Rounding::half_even, Layout::nchw, 12),
            "layout: nchw differs from this core's fixed layout nhwc (fixed_layout)");
  EXPECT_EQ(c.check_job(8, Rounding::half_even, Layout::nhwc, 10),
            "channels: 10 is not a multiple of this core's 4 lanes (lanes_divide_channels)");
  c.fixed_shift = 0;  // R = 0 is a value, not "unset"
  EXPECT_EQ(c.check_job(1, Rounding::half_even, Layout::nhwc, 4).find("R: 1 differs"), 0u);
}

// Issue 15 item 10: b's width is offset_bits ("shift" means R only); the old key shift_bits is a
// deprecated alias read with a warning on stderr naming the new spelling.
TEST(ConfigSchema, OffsetBitsAndTheDeprecatedShiftBitsAlias) {
  const auto& f = config_field("offset_bits");
  EXPECT_STREQ(f.option, "--offset-bits");
  EXPECT_STREQ(f.old_key, "shift_bits");
  EXPECT_STREQ(f.old_option, "--shift-bits");
  EXPECT_THROW((void)config_field("shift_bits"), std::logic_error);
  const auto j = AccelConfig{}.to_json();
  EXPECT_TRUE(j.contains("offset_bits"));
  EXPECT_FALSE(j.contains("shift_bits"));
  for (const auto& g : config_schema()) {  // no other field says "shift" for b
    if (std::string(g.key).find("shift") != std::string::npos) {
      EXPECT_STREQ(g.key, "fixed_shift");  // R
    }
  }
  testing::internal::CaptureStderr();
  EXPECT_EQ(CoreConfig::from_json({{"offset_bits", 20}}).arith.bw, 20);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  testing::internal::CaptureStderr();
  EXPECT_EQ(CoreConfig::from_json({{"shift_bits", 24}}).arith.bw, 24);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "normcore: warning: config: 'shift_bits' is deprecated, use 'offset_bits'\n");
  // A manifest written before the rename (every key required) reads through the alias.
  nlohmann::json old = j;
  old.erase("offset_bits");
  old["shift_bits"] = 40;
  testing::internal::CaptureStderr();
  EXPECT_EQ(AccelConfig::from_json(old, true).core.arith.bw, 40);
  (void)testing::internal::GetCapturedStderr();
  try {
    (void)CoreConfig::from_json({{"shift_bits", 24}, {"offset_bits", 24}});
    ADD_FAILURE() << "both spellings accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "config: 'shift_bits' is the deprecated name of 'offset_bits': give only "
                 "'offset_bits'");
  }
  CoreConfig c;
  c.arith.bw = 63;
  EXPECT_EQ(c.check(), "--offset-bits: 63 is out of range 2..62");
  EXPECT_EQ(c.check(FieldNames::json), "'offset_bits': 63 is out of range 2..62");
}

TEST(ConfigSchema, FloatTypes) {
  // contract v2: in_type / out_type / flush_subnormals, read and written as strings
  auto j = AccelConfig{}.to_json();
  EXPECT_EQ(j.at("in_type"), "int");
  EXPECT_EQ(j.at("out_type"), "int");
  EXPECT_EQ(j.at("flush_subnormals"), false);
  j["in_type"] = "bf16";
  j["out_type"] = "fp32";
  auto c = normcore::CoreConfig::from_json(j);
  EXPECT_EQ(c.arith.x_type, normcore::NumType::bf16);
  EXPECT_EQ(c.arith.y_type, normcore::NumType::fp32);
  // the widths follow the types
  EXPECT_NE(c.check(FieldNames::json).find("'in_type'/'out_type': input bits (xw) = 8 must be 16"),
            std::string::npos)
      << c.check(FieldNames::json);
  c.apply_float_widths();
  EXPECT_EQ(c.check(), "");
  EXPECT_EQ(c.to_json().at("out_type"), "fp32");
  j["in_type"] = "fp32";
  EXPECT_THROW(normcore::CoreConfig::from_json(j), std::invalid_argument);
  normcore::CoreConfig ints;
  ints.arith.flush_subnormals = true;
  EXPECT_NE(ints.check().find("--flush-subnormals: needs a float"), std::string::npos);
  c.fixed_shift = 3;
  EXPECT_NE(c.check().find("--fixed-shift: 3 must be -1 or 0"), std::string::npos);
}
