// Manifest reader and device-string parsing.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "normcore/device.hpp"
#include "normcore/manifest.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace {

using normcore::DeviceError;
using normcore::DeviceSpec;
using normcore::Error;

using normcore::test::devices_dir;
std::string manifest_path(const std::string& name) {
  return devices_dir() + "/" + name + "/rtl/manifest.json";
}
std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

using normcore::test::error_of;

TEST(Manifest, ReadsTheDefaultDevice) {
  const auto m = normcore::load_manifest(manifest_path("normcore"));
  EXPECT_EQ(m.top, "normcore_top");
  EXPECT_EQ(m.config.lanes, 8);
  EXPECT_EQ(m.config.in_bits, 8);
  EXPECT_EQ(m.config.bus_bits, 64);
  EXPECT_EQ(m.config.max_channels, 1024);
  EXPECT_EQ(m.window_bytes(), 4096u);
  EXPECT_EQ(m.offset("ID"), 0x000u);
  EXPECT_EQ(m.offset("CTRL"), 0x020u);
  EXPECT_EQ(m.field("MODE", "shift").lsb, 8);
  EXPECT_EQ(m.field("MODE", "shift").width, 6);
  EXPECT_EQ(m.reg("ID").reset, 0x4E43424Eu);
  EXPECT_EQ(m.error_codes.at("read"), 7);
  EXPECT_EQ(m.error_name(8), "write");
  EXPECT_EQ(m.error_name(77), "code 77");
  ASSERT_NE(m.find_reg(0x24), nullptr);
  EXPECT_EQ(m.find_reg(0x24)->name, "STATUS");
  EXPECT_EQ(m.find_reg(0x1C), nullptr);
}

TEST(Manifest, SmallDeviceDiffers) {
  const auto m = normcore::load_manifest(manifest_path("nc_small"));
  EXPECT_EQ(m.config.lanes, 3);
  EXPECT_EQ(m.config.in_bits, 16);
  EXPECT_FALSE(m.config.out_signed);
  EXPECT_EQ(m.config.max_channels, 5);
  EXPECT_EQ(m.config.max_inner(), 15u);
  EXPECT_EQ(m.config.bus_bytes(), 4);
}

TEST(Manifest, FieldHelpers) {
  normcore::FieldDesc f{"x", 8, 6, "rw", 0, false};
  EXPECT_EQ(f.mask(), 0x3F00u);
  EXPECT_EQ(f.put(0xFFFFFFFFu, 5), 0xFFFFC5FFu);
  EXPECT_EQ(f.get(0x1234u), 0x12u);
}

TEST(Manifest, ErrorsNameTheProblem) {
  const std::string good = slurp(manifest_path("normcore"));
  EXPECT_NE(error_of([] {
              (void)normcore::parse_manifest("{", "m.json");
            }).find("m.json: not valid JSON"),
            std::string::npos);
  auto broken = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return error_of([&] { (void)normcore::parse_manifest(t, "m.json"); });
  };
  EXPECT_NE(broken("\"kind\": \"accelerator\"", "\"kind\": \"core\"").find("kind is 'core'"),
            std::string::npos);
  EXPECT_NE(broken("\"lanes\": 8", "\"lanes\": 0").find("config: 'lanes': 0 is out of range 1..64"),
            std::string::npos);
  EXPECT_NE(broken("\"name\": \"CTRL\"", "\"name\": \"CTRLX\"").find("no register CTRL"),
            std::string::npos);
  EXPECT_NE(broken("\"contract_version\": 2", "\"contract_version\": 3").find("contract_version 3"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              (void)normcore::load_manifest("/nonexistent/manifest.json");
            }).find("/nonexistent/manifest.json"),
            std::string::npos);
}

TEST(DeviceString, Parses) {
  const auto s = DeviceSpec::parse("sim:a/b/manifest.json,latency=16,stall=0.25");
  EXPECT_EQ(s.backend, "sim");
  EXPECT_EQ(s.target, "a/b/manifest.json");
  EXPECT_EQ(s.get_u64("latency", 1), 16u);
  EXPECT_DOUBLE_EQ(s.get_double("stall", 0), 0.25);
  EXPECT_EQ(s.get("trace", "none"), "none");
  EXPECT_NO_THROW(s.check_all_used());
}

TEST(DeviceString, Rejects) {
  EXPECT_NE(error_of([] { (void)DeviceSpec::parse("manifest.json"); }).find("<backend>:<target>"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)DeviceSpec::parse(":x"); }).find("empty backend"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)DeviceSpec::parse("ref:"); }).find("empty target"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { (void)DeviceSpec::parse("ref:m,latency"); }).find("'latency' is not key=value"),
      std::string::npos);
  EXPECT_NE(error_of([] { (void)DeviceSpec::parse("ref:m,a=1,a=2"); }).find("'a' given twice"),
            std::string::npos);
  const auto s = DeviceSpec::parse("ref:m,latency=x1,bogus=1");
  EXPECT_NE(error_of([&] { (void)s.get_u64("latency", 0); }).find("latency=x1"), std::string::npos);
  EXPECT_NE(error_of([&] { s.check_all_used(); }).find("unknown option 'bogus'"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)normcore::open_device("nope:x"); }).find("unknown backend 'nope'"),
            std::string::npos);
}

}  // namespace
