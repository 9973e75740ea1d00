// The `ref` backend: register file semantics, DMA buffers, jobs bit-exact against the golden
// model (apply_tensor), validation, DMA errors, fault injection, soft reset, interrupts.
// Everything is driven through the public device interface, with register offsets and fields
// taken from the manifest, exactly as the driver does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "normcore/contract.hpp"
#include "normcore/device.hpp"
#include "normcore/manifest.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace {

using normcore::Device;
using normcore::DeviceError;
using normcore::DmaBuffer;
using normcore::Layout;
using normcore::Manifest;
using normcore::Rounding;

std::string manifest_path(const std::string& name) {
  return normcore::test::devices_dir() + "/" + name + "/rtl/manifest.json";
}

using normcore::test::error_of;

void EXPECT_HAS(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << text << "' lacks '" << part << "'";
}

std::string hex(std::uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::uppercase << std::hex << v;
  return os.str();
}

std::uint64_t mask_of(int bits) {
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

// Variants of the small device's manifest with other widths, written once per process (the
// ref backend only takes the datapath and memory widths from "config"; the clamp fields are
// widened to the output width like the generator does).
std::string custom_manifest(const std::string& tag, int in_bits, bool in_signed, int out_bits,
                            bool out_signed, int scale_bits, int offset_bits, int bus_bits,
                            int max_burst) {
  // One directory per process, removed at exit.
  static const struct TempDir {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("normcore_ref_test_" + std::to_string(::getpid()));
    TempDir() { std::filesystem::create_directories(path); }
    ~TempDir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } tmp;
  const auto& dir = tmp.path;
  const auto path = dir / (tag + ".json");
  if (std::filesystem::exists(path)) return path.string();
  std::ifstream in(manifest_path("nc_small"));
  nlohmann::json j = nlohmann::json::parse(in);
  auto& c = j["config"];
  c["in_bits"] = in_bits;
  c["in_signed"] = in_signed;
  c["out_bits"] = out_bits;
  c["out_signed"] = out_signed;
  c["scale_bits"] = scale_bits;
  c["offset_bits"] = offset_bits;
  c["bus_bits"] = bus_bits;
  c["max_burst"] = max_burst;
  c["name"] = tag;
  const normcore::ArithSpec a{in_bits, in_signed, scale_bits, offset_bits, out_bits, out_signed};
  for (auto& r : j["registers"]["registers"]) {
    if (r["name"] == "CLAMP_LO" || r["name"] == "CLAMP_HI") {
      const auto v = static_cast<std::uint64_t>(r["name"] == "CLAMP_LO" ? a.y_min() : a.y_max()) &
                     mask_of(out_bits);
      r["fields"][0]["width"] = out_bits;
      r["fields"][0]["reset"] = v;
      r["reset"] = v;
    }
  }
  std::ofstream(path) << j.dump(2);
  return path.string();
}
// 5-bit unsigned in, 3-bit signed out (bit-packed both ways), 128-bit bus, bursts of 4 words.
std::string packed_manifest() {
  return custom_manifest("packed", 5, false, 3, true, 16, 32, 128, 4);
}
// 12-bit signed in, 20-bit signed out (wider than the input: no in-place), 16-byte parameter
// entries (20 + 48 bits).
std::string wide_manifest() {
  return custom_manifest("wide", 12, true, 20, true, 20, 48, 32, 32);
}

// Register access by name.
struct Regs {
  Device& d;
  const Manifest& m() const { return d.manifest(); }
  std::uint32_t rd(std::string_view reg) { return d.read32(m().offset(reg)); }
  void wr(std::string_view reg, std::uint32_t v) { d.write32(m().offset(reg), v); }
  std::uint32_t get(std::string_view reg, std::string_view f) {
    return m().field(reg, f).get(rd(reg));
  }
  std::uint32_t put(std::string_view reg, std::string_view f, std::uint64_t v) const {
    return m().field(reg, f).put(0, v);
  }
  void wr64(const std::string& base, std::uint64_t v) {
    wr(base + "_LO", static_cast<std::uint32_t>(v));
    wr(base + "_HI", static_cast<std::uint32_t>(v >> 32));
  }
  std::uint64_t rd64(const std::string& base) {
    return rd(base + "_LO") | static_cast<std::uint64_t>(rd(base + "_HI")) << 32;
  }
  int code(const char* name) const { return m().error_codes.at(name); }
  void start(bool irq_done = true, bool irq_error = true) {
    wr("CTRL", put("CTRL", "start", 1) | put("CTRL", "irq_en_done", irq_done ? 1 : 0) |
                   put("CTRL", "irq_en_error", irq_error ? 1 : 0));
  }
  void soft_reset() { wr("CTRL", put("CTRL", "soft_reset", 1)); }
  void ack() { wr("IRQ_STATUS", put("IRQ_STATUS", "done", 1) | put("IRQ_STATUS", "error", 1)); }
};

// ---- The test's own packing (LSB first) ----
std::vector<std::uint8_t> pack(const std::vector<std::int64_t>& v, int bits) {
  std::vector<std::uint8_t> out((v.size() * static_cast<std::size_t>(bits) + 7) / 8, 0);
  if (bits == 8) {
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<std::uint8_t>(v[i]);
    return out;
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint64_t u = static_cast<std::uint64_t>(v[i]) & mask_of(bits);
    for (int k = 0; k < bits; ++k) {
      if ((u >> k) & 1) {
        const std::size_t bit = i * static_cast<std::size_t>(bits) + static_cast<std::size_t>(k);
        out[bit / 8] = static_cast<std::uint8_t>(out[bit / 8] | (1u << (bit % 8)));
      }
    }
  }
  return out;
}

std::vector<std::uint8_t> pack_params(const normcore::DeviceConfig& cfg,
                                      const std::vector<std::int64_t>& s,
                                      const std::vector<std::int64_t>& b) {
  const std::size_t pe = static_cast<std::size_t>(cfg.param_entry_bytes());
  std::vector<std::uint8_t> out(s.size() * pe, 0);
  for (std::size_t c = 0; c < s.size(); ++c) {
    __extension__ using u128 = unsigned __int128;
    const u128 e = static_cast<u128>(static_cast<std::uint64_t>(s[c]) & mask_of(cfg.scale_bits)) |
                   static_cast<u128>(static_cast<std::uint64_t>(b[c]) & mask_of(cfg.offset_bits))
                       << cfg.scale_bits;
    for (std::size_t k = 0; k < pe; ++k) out[c * pe + k] = static_cast<std::uint8_t>(e >> (8 * k));
  }
  return out;
}

struct Job {
  std::uint64_t C = 1, HW = 1, N = 1;
  Layout layout = Layout::nchw;
  normcore::JobSettings set;
  std::vector<std::int64_t> x, s, b;
  [[nodiscard]] std::uint64_t total() const { return C * HW * N; }
};

std::int64_t uniform(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

Job random_job(const normcore::DeviceConfig& cfg, std::mt19937_64& rng, std::uint64_t C,
               std::uint64_t HW, std::uint64_t N) {
  const auto a = cfg.arith();
  Job j;
  j.C = C;
  j.HW = HW;
  j.N = N;
  j.layout = uniform(rng, 0, 1) ? Layout::nhwc : Layout::nchw;
  j.set.rounding = static_cast<Rounding>(uniform(rng, 0, 3));
  // Mostly shifts that keep results inside the output range, sometimes any.
  j.set.shift = uniform(rng, 0, 3) == 0 ? static_cast<int>(uniform(rng, 0, a.acc_bits()))
                                        : static_cast<int>(uniform(rng, 0, a.sw + 2));
  if (uniform(rng, 0, 2) == 0) {
    j.set.lo = a.y_min();
    j.set.hi = a.y_max();
  } else {
    std::int64_t p = uniform(rng, a.y_min(), a.y_max()), q = uniform(rng, a.y_min(), a.y_max());
    j.set.lo = std::min(p, q);
    j.set.hi = std::max(p, q);
  }
  for (std::uint64_t c = 0; c < C; ++c) {
    j.s.push_back(uniform(rng, a.s_min(), a.s_max()) >> uniform(rng, 0, a.sw - 2));
    j.b.push_back(uniform(rng, a.b_min(), a.b_max()) >> uniform(rng, 0, a.bw - 2));
  }
  if (C > 1) {  // extremes
    j.s[0] = a.s_min();
    j.b[0] = a.b_max();
    j.s[1] = a.s_max();
    j.b[1] = a.b_min();
  }
  j.x.resize(j.total());
  for (auto& v : j.x) v = uniform(rng, a.x_min(), a.x_max());
  if (!j.x.empty()) j.x[0] = a.x_min();
  if (j.x.size() > 1) j.x[1] = a.x_max();
  return j;
}

std::vector<std::int64_t> expected(const Job& j) {
  std::vector<std::int64_t> y(j.x.size());
  normcore::apply_tensor(j.x, y, j.s, j.b, static_cast<std::int64_t>(j.HW), j.layout, j.set);
  return y;
}

void program(Regs& r, const Job& j, std::uint64_t src, std::uint64_t dst, std::uint64_t param) {
  const auto& cfg = r.m().config;
  r.wr("CHANNELS", static_cast<std::uint32_t>(j.C));
  r.wr("INNER", static_cast<std::uint32_t>(j.HW));
  r.wr("OUTER", static_cast<std::uint32_t>(j.N));
  r.wr("MODE", r.put("MODE", "layout", j.layout == Layout::nhwc ? 1 : 0) |
                   r.put("MODE", "rounding", static_cast<std::uint64_t>(j.set.rounding)) |
                   r.put("MODE", "shift", static_cast<std::uint64_t>(j.set.shift)));
  r.wr("CLAMP_LO",
       static_cast<std::uint32_t>(static_cast<std::uint64_t>(j.set.lo) & mask_of(cfg.out_bits)));
  r.wr("CLAMP_HI",
       static_cast<std::uint32_t>(static_cast<std::uint64_t>(j.set.hi) & mask_of(cfg.out_bits)));
  r.wr64("SRC", src);
  r.wr64("DST", dst);
  r.wr64("PARAM", param);
}

// Buffers of one job: input, output (with a sentinel tail), parameters.
struct JobBuffers {
  std::unique_ptr<DmaBuffer> in, out, prm;
  std::size_t out_bytes = 0;
  std::vector<std::uint8_t> out_before;
};

constexpr std::uint8_t kSentinel = 0xA5;

JobBuffers stage(Device& d, const Job& j, std::size_t out_slack = 24) {
  const auto& cfg = d.manifest().config;
  JobBuffers b;
  const auto in = pack(j.x, cfg.in_bits);
  const auto prm = pack_params(cfg, j.s, j.b);
  b.out_bytes = (j.x.size() * static_cast<std::size_t>(cfg.out_bits) + 7) / 8;
  b.prm = d.alloc(prm.size());
  b.in = d.alloc(in.size());
  b.out = d.alloc(b.out_bytes + out_slack);
  std::copy(prm.begin(), prm.end(), b.prm->map().begin());
  std::copy(in.begin(), in.end(), b.in->map().begin());
  std::fill(b.out->map().begin(), b.out->map().end(), kSentinel);
  b.prm->sync_to_device();
  b.in->sync_to_device();
  b.out->sync_to_device();
  b.out_before.assign(b.out->map().begin(), b.out->map().end());
  return b;
}

std::vector<std::uint8_t> contents(DmaBuffer& b) {
  b.sync_from_device();
  return {b.map().begin(), b.map().end()};
}

// Runs a good job and checks status, interrupt, counters and every output byte.
void run_and_check(Device& d, const Job& j, const std::string& what) {
  SCOPED_TRACE(what);
  Regs r{d};
  auto b = stage(d, j);
  program(r, j, b.in->device_address(), b.out->device_address(), b.prm->device_address());
  r.start();
  ASSERT_TRUE(d.wait_irq(std::chrono::milliseconds(0)));
  EXPECT_EQ(r.get("STATUS", "busy"), 0u);
  EXPECT_EQ(r.get("STATUS", "done"), 1u);
  EXPECT_EQ(r.get("STATUS", "error"), 0u);
  EXPECT_EQ(r.get("IRQ_STATUS", "done"), 1u);
  EXPECT_EQ(r.get("IRQ_STATUS", "error"), 0u);
  EXPECT_EQ(r.get("ERR_CODE", "code"), 0u);
  EXPECT_EQ(r.rd64("PERF_ELEMS"), j.total());
  EXPECT_GT(r.rd("PERF_ACTIVE"), 0u);
  EXPECT_EQ(r.rd("PERF_RD_STALL"), 0u);
  EXPECT_EQ(r.rd("PERF_WR_STALL"), 0u);
  const auto want = pack(expected(j), d.manifest().config.out_bits);
  const auto got = contents(*b.out);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i] && bad++ < 5) {
      ADD_FAILURE() << "output byte " << i << " of " << want.size() << ": got " << int(got[i])
                    << ", want " << int(want[i]);
    }
  }
  EXPECT_EQ(bad, 0u);
  for (std::size_t i = want.size(); i < got.size(); ++i) {
    ASSERT_EQ(got[i], kSentinel) << "byte " << i << " past the output was written";
  }
  r.ack();
  EXPECT_FALSE(d.wait_irq(std::chrono::milliseconds(0)));
}

// Starts a job expected to fail; checks code, address, status, interrupt and that no buffer
// changed.
void expect_failure(Device& d, JobBuffers& b, int code, std::optional<std::uint64_t> addr,
                    const std::string& what) {
  SCOPED_TRACE(what);
  Regs r{d};
  const auto in_before = contents(*b.in);
  const auto prm_before = contents(*b.prm);
  r.start();
  ASSERT_TRUE(d.wait_irq(std::chrono::milliseconds(0)));
  EXPECT_EQ(r.get("ERR_CODE", "code"), static_cast<std::uint32_t>(code))
      << d.manifest().error_name(static_cast<int>(r.get("ERR_CODE", "code")));
  if (addr) {
    EXPECT_EQ(r.rd64("ERR_ADDR"), *addr) << hex(r.rd64("ERR_ADDR")) << " vs " << hex(*addr);
  }
  EXPECT_EQ(r.get("STATUS", "busy"), 0u);
  EXPECT_EQ(r.get("STATUS", "done"), 0u);
  EXPECT_EQ(r.get("STATUS", "error"), 1u);
  EXPECT_EQ(r.get("IRQ_STATUS", "error"), 1u);
  EXPECT_EQ(r.get("IRQ_STATUS", "done"), 0u);
  EXPECT_EQ(contents(*b.out), b.out_before);
  EXPECT_EQ(contents(*b.in), in_before);
  EXPECT_EQ(contents(*b.prm), prm_before);
  r.ack();
}

std::string param_name(const ::testing::TestParamInfo<std::string>& p) {
  return p.param;
}

std::unique_ptr<Device> open(const std::string& manifest, const std::string& opts = "") {
  return normcore::open_device("ref:" + manifest + opts);
}

// ---------------------------------------------------------------------------------------------
// Opening

TEST(RefOpen, OptionsAreCheckedAndReported) {
  const std::string m = manifest_path("normcore");
  EXPECT_NO_THROW((void)open(m, ",mem=1048576,fail_job=3,fail=write,hang_job=4,threads=2"));
  EXPECT_HAS(error_of([&] { (void)open(m, ",bogus=1"); }), "unknown option 'bogus'");
  EXPECT_HAS(error_of([&] { (void)open(m, ",fail=maybe"); }), "fail=maybe");
  EXPECT_HAS(error_of([&] { (void)open(m, ",threads=0"); }), "threads=0");
  EXPECT_HAS(error_of([&] { (void)open(m, ",mem=0"); }), "mem=0");
  EXPECT_HAS(error_of([&] { (void)open(m, ",mem=lots"); }), "mem=lots");
  const std::string missing = manifest_path("no_such_device");
  const std::string e = error_of([&] { (void)open(missing); });
  EXPECT_HAS(e, missing);
  EXPECT_THROW((void)open(missing), DeviceError);
}

TEST(RefOpen, ReportsItself) {
  auto d = open(manifest_path("nc_small"));
  EXPECT_TRUE(d->has_irq());
  EXPECT_EQ(d->name(), "ref:" + manifest_path("nc_small"));
  EXPECT_EQ(d->manifest().config.lanes, 3);
}

// ---------------------------------------------------------------------------------------------
// Register file

class RefRegisters : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Device> dev = open(manifest_path(GetParam()));
  Regs r{*dev};
};

TEST_P(RefRegisters, ResetValuesEqualTheManifest) {
  for (const auto& reg : r.m().registers) {
    EXPECT_EQ(dev->read32(reg.offset), reg.reset) << reg.name;
  }
}

TEST_P(RefRegisters, RwReadsBackMaskedToFields) {
  for (const auto& reg : r.m().registers) {
    if (reg.name == "CTRL") continue;  // has w1s_sc bits: below
    std::uint32_t rw = 0, other = 0;
    for (const auto& f : reg.fields) (f.access == "rw" ? rw : other) |= f.mask();
    if (rw == 0) continue;
    const std::uint32_t before = dev->read32(reg.offset);
    dev->write32(reg.offset, 0xFFFFFFFFu);
    EXPECT_EQ(dev->read32(reg.offset), rw | (before & other)) << reg.name;
    dev->write32(reg.offset, 0x5A5A5A5Au);
    EXPECT_EQ(dev->read32(reg.offset), (0x5A5A5A5Au & rw) | (before & other)) << reg.name;
    dev->write32(reg.offset, 0);
    EXPECT_EQ(dev->read32(reg.offset), before & other) << reg.name;
  }
  const std::uint32_t en = r.put("CTRL", "irq_en_done", 1) | r.put("CTRL", "irq_en_error", 1);
  r.wr("CTRL", 0xFFFFFFFFu & ~(r.put("CTRL", "start", 1) | r.put("CTRL", "soft_reset", 1)));
  EXPECT_EQ(r.rd("CTRL"), en);
}

TEST_P(RefRegisters, RoWritesAreIgnored) {
  for (const auto& reg : r.m().registers) {
    bool all_ro = true;
    for (const auto& f : reg.fields) all_ro = all_ro && f.access == "ro";
    if (!all_ro) continue;
    dev->write32(reg.offset, 0xFFFFFFFFu);
    EXPECT_EQ(dev->read32(reg.offset), reg.reset) << reg.name;
    dev->write32(reg.offset, 0);
    EXPECT_EQ(dev->read32(reg.offset), reg.reset) << reg.name;
  }
  // STATUS: busy/done/error are ro beside the w1c bit.
  r.wr("STATUS", 0xFFFFFFFFu);
  EXPECT_EQ(r.rd("STATUS"), 0u);
}

TEST_P(RefRegisters, W1cClearsOnlyWrittenOnes) {
  // A failing job (C = 0) sets IRQ_STATUS.error; a START while a hung job runs sets
  // STATUS.start_ignored (below, in RefFaults).
  r.wr("CHANNELS", 0);
  r.start(false, false);
  EXPECT_EQ(r.get("IRQ_STATUS", "error"), 1u);
  r.wr("IRQ_STATUS", r.put("IRQ_STATUS", "done", 1));  // the other bit
  EXPECT_EQ(r.get("IRQ_STATUS", "error"), 1u);
  r.wr("IRQ_STATUS", 0);
  EXPECT_EQ(r.get("IRQ_STATUS", "error"), 1u);
  r.wr("IRQ_STATUS", r.put("IRQ_STATUS", "error", 1));
  EXPECT_EQ(r.rd("IRQ_STATUS"), 0u);
}

TEST_P(RefRegisters, W1sScReadsZero) {
  r.wr("CTRL", r.put("CTRL", "irq_en_done", 1));
  r.wr("CHANNELS", 0);  // the START below fails validation: no memory needed
  r.wr("CTRL", r.put("CTRL", "start", 1) | r.put("CTRL", "irq_en_done", 1));
  EXPECT_EQ(r.rd("CTRL"), r.put("CTRL", "irq_en_done", 1));
  r.wr("CTRL", r.put("CTRL", "soft_reset", 1));
  EXPECT_EQ(r.rd("CTRL"), 0u);
}

TEST_P(RefRegisters, BadOffsetsAreDeviceErrorsNamingTheOffset) {
  EXPECT_HAS(error_of([&] { (void)dev->read32(0x1000); }), "0x1000");
  EXPECT_HAS(error_of([&] { dev->write32(0x1000, 1); }), "0x1000");
  EXPECT_HAS(error_of([&] { (void)dev->read32(0x2); }), "0x2");
  EXPECT_HAS(error_of([&] { dev->write32(0x2, 1); }), "0x2");
  EXPECT_THROW((void)dev->read32(0x1000), DeviceError);
  std::uint32_t hole = 0;
  while (r.m().find_reg(hole) != nullptr) hole += 4;
  const std::string rd_err = error_of([&] { (void)dev->read32(hole); });
  EXPECT_HAS(rd_err, hex(hole));
  EXPECT_HAS(rd_err, "SLVERR");
  const std::string wr_err = error_of([&] { dev->write32(hole, 0xFFFFFFFFu); });
  EXPECT_HAS(wr_err, hex(hole));
  EXPECT_HAS(wr_err, "SLVERR");
  EXPECT_THROW(dev->write32(r.m().window_bytes() - 4, 0), DeviceError);
  // Nothing changed.
  for (const auto& reg : r.m().registers) EXPECT_EQ(dev->read32(reg.offset), reg.reset) << reg.name;
}

TEST_P(RefRegisters, CountsAccesses) {
  const auto before = dev->counters();
  (void)r.rd("ID");
  r.wr("CHANNELS", 2);
  (void)dev->wait_irq(std::chrono::milliseconds(0));
  EXPECT_EQ(dev->counters().reads, before.reads + 1);
  EXPECT_EQ(dev->counters().writes, before.writes + 1);
  EXPECT_EQ(dev->counters().irq_waits, before.irq_waits + 1);
}

// ("Ref" prefix: the instances are named Ref/RefRegisters.*/<device>, so --gtest_filter='Ref*'
// selects them.)
INSTANTIATE_TEST_SUITE_P(Ref, RefRegisters, ::testing::Values("normcore", "nc_small"), param_name);

// ---------------------------------------------------------------------------------------------
// DMA buffers

TEST(RefBuffers, AlignmentAddressesAndBounds) {
  auto d = open(manifest_path("normcore"));
  const std::uint64_t bus = static_cast<std::uint64_t>(d->manifest().config.bus_bytes());
  std::vector<std::unique_ptr<DmaBuffer>> bufs;
  const std::size_t sizes[] = {1, 7, 64, 100, 4096, 5000, 3};
  const std::size_t aligns[] = {1, 2, 64, 4096, 8, 256, 65536};
  for (std::size_t i = 0; i < 7; ++i) {
    bufs.push_back(d->alloc(sizes[i], aligns[i]));
    auto& b = *bufs.back();
    EXPECT_EQ(b.size(), sizes[i]);
    EXPECT_EQ(b.map().size(), sizes[i]);
    EXPECT_EQ(b.device_address() % std::max<std::uint64_t>(aligns[i], bus), 0u) << i;
    EXPECT_NE(b.device_address(), 0u);
  }
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    for (std::size_t k = i + 1; k < bufs.size(); ++k) {
      const auto a0 = bufs[i]->device_address(), a1 = bufs[k]->device_address();
      EXPECT_TRUE(a0 + bufs[i]->size() <= a1 || a1 + bufs[k]->size() <= a0) << i << " " << k;
    }
  }
  auto& b = *bufs[3];  // 100 bytes
  EXPECT_NO_THROW(b.sync_to_device(0, 100));
  EXPECT_NO_THROW(b.sync_from_device(100, 0));
  EXPECT_NO_THROW(b.sync_from_device(99, 1));
  EXPECT_HAS(error_of([&] { b.sync_to_device(0, 101); }), "100-byte");
  EXPECT_THROW(b.sync_from_device(101, 0), DeviceError);
  EXPECT_THROW(b.sync_from_device(50, SIZE_MAX), DeviceError);
  EXPECT_THROW(b.sync_to_device(SIZE_MAX, 2), DeviceError);
  // Host view is writable and stable.
  b.map()[5] = 42;
  EXPECT_EQ(b.map()[5], 42);
  EXPECT_THROW((void)d->alloc(16, 3), DeviceError);
  EXPECT_THROW((void)d->alloc(0), DeviceError);
}

TEST(RefBuffers, ExhaustionCountersAndReuse) {
  auto d = open(manifest_path("normcore"), ",mem=65536");
  EXPECT_EQ(d->counters().buffers, 0u);
  EXPECT_EQ(d->counters().buffer_bytes, 0u);
  auto a = d->alloc(40000);
  EXPECT_EQ(d->counters().buffers, 1u);
  EXPECT_EQ(d->counters().buffer_bytes, 40000u);
  const std::string e = error_of([&] { (void)d->alloc(30000); });
  EXPECT_HAS(e, "out of device memory");
  EXPECT_HAS(e, "30000 bytes requested");
  EXPECT_HAS(e, std::to_string(65536 - 40000) + " free");
  EXPECT_THROW((void)d->alloc(65537), DeviceError);
  EXPECT_THROW((void)d->alloc(std::size_t{1} << 62), DeviceError);
  {
    auto b = d->alloc(20000);
    EXPECT_EQ(d->counters().buffers, 2u);
    EXPECT_EQ(d->counters().buffer_bytes, 60000u);
  }
  EXPECT_EQ(d->counters().buffer_bytes, 40000u);
  a.reset();
  EXPECT_EQ(d->counters().buffer_bytes, 0u);
  auto c = d->alloc(65536);  // the whole region again
  EXPECT_EQ(d->counters().buffers, 3u);
  // A buffer may outlive its device.
  d.reset();
  c->map()[0] = 1;
  c.reset();
}

// ---------------------------------------------------------------------------------------------
// Jobs against the golden model

class RefJobs : public ::testing::TestWithParam<std::string> {
 protected:
  static std::string path_of(const std::string& p) {
    if (p == "packed") return packed_manifest();
    if (p == "wide") return wide_manifest();
    return manifest_path(p);
  }
  std::unique_ptr<Device> dev = open(path_of(GetParam()));
};

TEST_P(RefJobs, RandomJobsMatchTheGoldenModel) {
  const auto& cfg = dev->manifest().config;
  std::mt19937_64 rng(std::hash<std::string>{}(GetParam()));
  const std::uint64_t max_c =
      std::min<std::uint64_t>(static_cast<std::uint64_t>(cfg.max_channels), 40);
  const std::uint64_t max_hw = std::min<std::uint64_t>(cfg.max_inner(), 200);
  for (int i = 0; i < 40; ++i) {
    const auto C = static_cast<std::uint64_t>(uniform(rng, 1, static_cast<std::int64_t>(max_c)));
    const auto HW = static_cast<std::uint64_t>(uniform(rng, 1, static_cast<std::int64_t>(max_hw)));
    const auto N = static_cast<std::uint64_t>(uniform(rng, 1, 3));
    const Job j = random_job(cfg, rng, C, HW, N);
    run_and_check(
        *dev, j,
        "job " + std::to_string(i) + ": C=" + std::to_string(C) + " HW=" + std::to_string(HW) +
            " N=" + std::to_string(N) + " " + std::string(normcore::to_string(j.layout)) + " R=" +
            std::to_string(j.set.shift) + " " + std::string(normcore::to_string(j.set.rounding)));
  }
}

TEST_P(RefJobs, OutputsEndingMidWord) {
  const auto& cfg = dev->manifest().config;
  std::mt19937_64 rng(7);
  // Totals of 1..19 elements: every residue of the last bus word and of the last byte.
  for (std::uint64_t t = 1; t < 20; ++t) {
    const std::uint64_t C =
        std::min<std::uint64_t>(static_cast<std::uint64_t>(cfg.max_channels), t % 3 + 1);
    const Job j = random_job(cfg, rng, 1, 1, t);  // N = t images of one element
    run_and_check(*dev, j, "total " + std::to_string(t));
    const Job k = random_job(cfg, rng, C, 1, t);
    run_and_check(*dev, k, "total " + std::to_string(t * C) + " C " + std::to_string(C));
  }
}

TEST_P(RefJobs, LargeJobsUseTablesAndThreadsAlike) {
  // Big enough for the lookup tables and the worker threads; odd sizes so the thread split
  // and the tail are exercised. Same result with one thread.
  const auto& cfg = dev->manifest().config;
  std::mt19937_64 rng(11);
  const std::uint64_t C = std::min<std::uint64_t>(static_cast<std::uint64_t>(cfg.max_channels), 3);
  const std::uint64_t HW = std::min<std::uint64_t>(cfg.max_inner(), 1001);
  const std::uint64_t N = (cfg.in_bits > 8 ? 700000 : 300000) / (C * HW) + 1;
  Job j = random_job(cfg, rng, C, HW, N);
  j.layout = Layout::nchw;
  run_and_check(*dev, j, "nchw");
  j.layout = Layout::nhwc;
  run_and_check(*dev, j, "nhwc");
  auto one = open(path_of(GetParam()), ",threads=1");
  run_and_check(*one, j, "nhwc, one thread");
}

INSTANTIATE_TEST_SUITE_P(Ref, RefJobs, ::testing::Values("normcore", "nc_small", "packed", "wide"),
                         param_name);

TEST(RefJobs4M, FourMillionInt8ElementsMatchApplyTensor) {
  auto d = open(manifest_path("normcore"));
  std::mt19937_64 rng(4);
  Job j = random_job(d->manifest().config, rng, 16, 1 << 18, 1);  // 4 Mi elements
  j.layout = Layout::nchw;
  j.set = normcore::JobSettings{9, Rounding::half_even, -100, 120};
  run_and_check(*d, j, "4M nchw");
}

TEST(RefJobsInPlace, SameBufferForInputAndOutput) {
  for (const std::string name : {"normcore", "nc_small", "packed"}) {
    SCOPED_TRACE(name);
    const std::string path = name == "packed" ? packed_manifest() : manifest_path(name);
    auto d = open(path);
    Regs r{*d};
    const auto& cfg = d->manifest().config;
    std::mt19937_64 rng(5);
    for (std::uint64_t total : {std::uint64_t{1}, std::uint64_t{77}, std::uint64_t{300001}}) {
      const std::uint64_t C =
          std::min<std::uint64_t>(static_cast<std::uint64_t>(cfg.max_channels), 5);
      const Job j = random_job(cfg, rng, C, 1, (total + C - 1) / C);
      const auto in = pack(j.x, cfg.in_bits);
      const auto prm = pack_params(cfg, j.s, j.b);
      auto io = d->alloc(in.size());
      auto p = d->alloc(prm.size());
      std::copy(in.begin(), in.end(), io->map().begin());
      std::copy(prm.begin(), prm.end(), p->map().begin());
      program(r, j, io->device_address(), io->device_address(), p->device_address());
      r.start();
      ASSERT_EQ(r.get("STATUS", "done"), 1u)
          << d->manifest().error_name(static_cast<int>(r.get("ERR_CODE", "code")));
      const auto want = pack(expected(j), cfg.out_bits);
      const auto got = contents(*io);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << total;
      // Input bytes past the (narrower) output are left alone.
      EXPECT_TRUE(std::equal(in.begin() + static_cast<std::ptrdiff_t>(want.size()), in.end(),
                             got.begin() + static_cast<std::ptrdiff_t>(want.size())));
      r.ack();
    }
  }
}

TEST(RefJobsSpan, RegionsMaySpanAdjacentBuffers) {
  // Device memory is the union of the live buffers: an input or output crossing from one
  // buffer into the next (adjacent) one is fine.
  auto d = open(manifest_path("normcore"), ",mem=1048576");
  Regs r{*d};
  std::mt19937_64 rng(8);
  const Job j = random_job(d->manifest().config, rng, 3, 100, 2);  // 600 bytes
  const auto in = pack(j.x, 8);
  const auto prm = pack_params(d->manifest().config, j.s, j.b);
  auto p = d->alloc(prm.size());
  auto in0 = d->alloc(256, 8), in1 = d->alloc(344, 8);
  auto out0 = d->alloc(304, 8), out1 = d->alloc(296, 8);
  ASSERT_EQ(in1->device_address(), in0->device_address() + 256);
  ASSERT_EQ(out1->device_address(), out0->device_address() + 304);
  std::copy(prm.begin(), prm.end(), p->map().begin());
  std::copy(in.begin(), in.begin() + 256, in0->map().begin());
  std::copy(in.begin() + 256, in.end(), in1->map().begin());
  program(r, j, in0->device_address(), out0->device_address(), p->device_address());
  r.start();
  ASSERT_EQ(r.get("STATUS", "done"), 1u) << r.get("ERR_CODE", "code");
  const auto want = pack(expected(j), 8);
  auto got = contents(*out0);
  const auto tail = contents(*out1);
  got.insert(got.end(), tail.begin(), tail.end());
  EXPECT_EQ(got, want);
}

// ---------------------------------------------------------------------------------------------
// Validation: every code, in the RTL's priority order, with no memory access

class RefValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(3);
    job = random_job(dev->manifest().config, rng, 4, 10, 2);  // 80 elements
    b = stage(*dev, job);
  }
  void good() {
    program(r, job, b.in->device_address(), b.out->device_address(), b.prm->device_address());
    r.wr64("WIN_BASE", 0);
    r.wr64("WIN_LAST", ~std::uint64_t{0});
  }
  void fails(const char* code, const std::string& what) {
    expect_failure(*dev, b, r.code(code), 0, what);
    EXPECT_EQ(r.rd64("PERF_ELEMS"), 0u);
  }
  std::unique_ptr<Device> dev = open(manifest_path("normcore"));
  Regs r{*dev};
  Job job;
  JobBuffers b;
};

TEST_F(RefValidation, EveryCodeThenAGoodJob) {
  const auto& cfg = dev->manifest().config;
  const std::uint64_t src = b.in->device_address(), dst = b.out->device_address();
  const std::uint64_t prm = b.prm->device_address();
  good();
  r.wr("CHANNELS", 0);
  fails("bad_channels", "C = 0");
  good();
  r.wr("CHANNELS", static_cast<std::uint32_t>(cfg.max_channels + 1));
  fails("bad_channels", "C > max");
  good();
  r.wr("INNER", 0);
  fails("zero_length", "HW = 0");
  good();
  r.wr("OUTER", 0);
  fails("zero_length", "N = 0");
  good();
  r.wr("MODE", r.put("MODE", "shift", static_cast<std::uint64_t>(cfg.arith().acc_bits() + 1)));
  fails("bad_shift", "R > acc bits");
  good();
  r.wr64("SRC", src + 1);
  fails("misaligned", "SRC");
  good();
  r.wr64("DST", dst + 4);
  fails("misaligned", "DST");
  good();
  r.wr64("PARAM", prm + 2);
  fails("misaligned", "PARAM");
  good();
  r.wr64("WIN_BASE", src + 8);
  fails("window", "SRC below the window");
  good();
  r.wr64("WIN_BASE", std::min({src, dst, prm}));
  r.wr64("WIN_LAST", dst + 80 - 2);
  fails("window", "output ends past the window");
  good();
  r.wr64("WIN_BASE", std::min({src, dst, prm}));
  r.wr64("WIN_LAST", dst + 80 - 1);
  r.start();  // exactly inside: fine
  EXPECT_EQ(r.get("STATUS", "done"), 1u);
  r.ack();
  std::fill(b.out->map().begin(), b.out->map().end(), kSentinel);
  good();
  r.wr64("SRC", 0xFFFFFFF8ull);
  fails("window", "input ends past 2^addr_bits");
  good();
  r.wr64("DST", std::uint64_t{1} << 32);
  fails("window", "DST beyond the address width");
  good();
  r.wr64("DST", src + 8);
  fails("overlap", "DST inside the input");
  good();
  r.wr64("SRC", dst + 72);
  fails("overlap", "input starting inside the output");
  // Priority: the first failing check wins.
  good();
  r.wr("CHANNELS", 0);
  r.wr("INNER", 0);
  r.wr64("SRC", 3);
  fails("bad_channels", "1 > 2, 4");
  good();
  r.wr("OUTER", 0);
  r.wr("MODE", r.put("MODE", "shift", 63));
  fails("zero_length", "2 > 3");
  good();
  r.wr("MODE", r.put("MODE", "shift", 63));
  r.wr64("DST", 4);
  fails("bad_shift", "3 > 4");
  good();
  r.wr64("PARAM", 4);
  r.wr64("SRC", 0xFFFFFFF8ull);
  fails("misaligned", "4 > 5");
  good();
  r.wr64("SRC", 0xFFFFFFF8ull);
  r.wr64("DST", 0xFFFFFFF8ull + 8);
  fails("window", "5 > 6");
  // The registers were not disturbed by the failures; the same settings now pass.
  good();
  r.start();
  EXPECT_EQ(r.get("STATUS", "done"), 1u);
  EXPECT_EQ(r.get("ERR_CODE", "code"), 0u);
  EXPECT_EQ(r.rd64("ERR_ADDR"), 0u);
  const auto want = pack(expected(job), 8);
  const auto got = contents(*b.out);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin()));
}

TEST(RefValidationWide, InPlaceIsAnOverlapWhenTheOutputIsWider) {
  auto d = open(wide_manifest());
  Regs r{*d};
  std::mt19937_64 rng(12);
  const Job j = random_job(d->manifest().config, rng, 2, 8, 1);
  auto b = stage(*d, j);
  program(r, j, b.in->device_address(), b.in->device_address(), b.prm->device_address());
  expect_failure(*d, b, r.code("overlap"), 0, "wide in place");
}

// ---------------------------------------------------------------------------------------------
// DMA errors

TEST(RefDmaErrors, ReadsOutsideTheBuffers) {
  auto d = open(manifest_path("normcore"));
  Regs r{*d};
  std::mt19937_64 rng(9);
  const Job j = random_job(d->manifest().config, rng, 2, 100, 1);  // 200 bytes
  auto b = stage(*d, j);
  const std::uint64_t src = b.in->device_address(), prm = b.prm->device_address();
  const std::uint64_t nowhere = 0x60000000;  // inside the window, no buffer there
  program(r, j, nowhere, b.out->device_address(), prm);
  expect_failure(*d, b, r.code("read"), nowhere, "input not allocated");
  program(r, j, src, b.out->device_address(), nowhere + 4096);
  expect_failure(*d, b, r.code("read"), nowhere + 4096, "parameters not allocated");
  program(r, j, nowhere, b.out->device_address(), nowhere + 4096);
  expect_failure(*d, b, r.code("read"), nowhere + 4096, "parameters are read first");
  // Input running past the end of the last buffer: the first word beyond it fails.
  auto small = d->alloc(60);  // occupies bus words up to +64
  program(r, j, small->device_address(), b.out->device_address(), prm);
  expect_failure(*d, b, r.code("read"), small->device_address() + 64, "input past its buffer");
  // ERR_CODE, ERR_ADDR are cleared by the next START.
  program(r, j, src, b.out->device_address(), prm);
  r.start();
  EXPECT_EQ(r.get("STATUS", "done"), 1u);
  EXPECT_EQ(r.get("ERR_CODE", "code"), 0u);
  EXPECT_EQ(r.rd64("ERR_ADDR"), 0u);
}

// Start of the write burst holding byte `bad` (bursts from dst of max_burst bus words, never
// across 4 KiB).
std::uint64_t burst_of(const normcore::DeviceConfig& cfg, std::uint64_t dst, std::uint64_t bad) {
  const std::uint64_t most = static_cast<std::uint64_t>(cfg.max_burst * cfg.bus_bytes());
  std::uint64_t a = dst;
  for (;;) {
    const std::uint64_t len = std::min(most, 4096 - a % 4096);
    if (bad < a + len) return a;
    a += len;
  }
}

TEST(RefDmaErrors, WritesOutsideTheBuffers) {
  for (const std::string name : {"normcore", "packed"}) {
    SCOPED_TRACE(name);
    auto d = open(name == "packed" ? packed_manifest() : manifest_path(name));
    Regs r{*d};
    const auto& cfg = d->manifest().config;
    std::mt19937_64 rng(10);
    // An output of 6000 bytes into a 5000-byte buffer (allocated last: nothing after it), once
    // from its 4 KiB-aligned start and once from 4000 bytes into a bigger one.
    const std::uint64_t elems = 6000 * 8 / static_cast<std::uint64_t>(cfg.out_bits);
    const std::uint64_t C =
        std::min<std::uint64_t>(static_cast<std::uint64_t>(cfg.max_channels), 4);
    const Job j = random_job(cfg, rng, C, 1, elems / C);
    const auto want = pack(expected(j), cfg.out_bits);
    auto b = stage(*d, j);
    for (std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{4000}}) {
      SCOPED_TRACE(offset);
      auto out = d->alloc(5000 + offset, 4096);
      std::fill(out->map().begin(), out->map().end(), kSentinel);
      const std::uint64_t dst = out->device_address() + offset;
      const std::uint64_t bad = out->device_address() + 5000 + offset;
      const std::uint64_t burst = burst_of(cfg, dst, bad);
      if (name == "normcore") {  // 256-byte bursts; from +4000 the first one is 96 bytes (4 KiB)
        EXPECT_EQ(burst - dst, offset == 0 ? 4864u : 4960u);
      }
      program(r, j, b.in->device_address(), dst, b.prm->device_address());
      r.start();
      EXPECT_EQ(r.get("ERR_CODE", "code"), static_cast<std::uint32_t>(r.code("write")));
      EXPECT_EQ(r.rd64("ERR_ADDR"), burst) << hex(r.rd64("ERR_ADDR")) << " vs " << hex(burst);
      EXPECT_EQ(r.get("STATUS", "error"), 1u);
      EXPECT_EQ(r.get("IRQ_STATUS", "error"), 1u);
      const auto got = contents(*out);
      const std::size_t written = static_cast<std::size_t>(burst - dst);
      for (std::size_t i = 0; i < offset; ++i) ASSERT_EQ(got[i], kSentinel) << i;
      for (std::size_t i = 0; i < written; ++i) ASSERT_EQ(got[offset + i], want[i]) << i;
      for (std::size_t i = offset + written; i < got.size(); ++i) ASSERT_EQ(got[i], kSentinel) << i;
      r.ack();
      out.reset();
    }
    // Output not allocated at all: the first burst fails, nothing is written anywhere.
    program(r, j, b.in->device_address(), 0x60000000, b.prm->device_address());
    expect_failure(*d, b, r.code("write"), 0x60000000, "output not allocated");
  }
}

// ---------------------------------------------------------------------------------------------
// Fault injection, soft reset, START while busy, interrupts

struct Rig {
  explicit Rig(const std::string& opts) : d(open(manifest_path("normcore"), opts)), r{*d} {
    std::mt19937_64 rng(6);
    j = random_job(d->manifest().config, rng, 3, 50, 1);
    b = stage(*d, j);
  }
  void program_good() {
    program(r, j, b.in->device_address(), b.out->device_address(), b.prm->device_address());
  }
  void expect_good() {
    program_good();
    r.start();
    ASSERT_EQ(r.get("STATUS", "done"), 1u);
    const auto want = pack(expected(j), 8);
    const auto got = contents(*b.out);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin()));
    r.ack();
    std::fill(b.out->map().begin(), b.out->map().end(), kSentinel);
  }
  std::unique_ptr<Device> d;
  Regs r;
  Job j;
  JobBuffers b;
};

TEST(RefFaults, FailJobRead) {
  Rig g(",fail_job=2");
  g.expect_good();  // job 1
  g.program_good();
  g.r.wr("CHANNELS", 0);  // fails validation: not counted
  expect_failure(*g.d, g.b, g.r.code("bad_channels"), 0, "validation");
  g.program_good();  // job 2
  expect_failure(*g.d, g.b, g.r.code("read"), g.b.in->device_address(), "injected read");
  g.expect_good();  // job 3
}

TEST(RefFaults, FailJobWrite) {
  Rig g(",fail_job=1,fail=write");
  g.program_good();
  expect_failure(*g.d, g.b, g.r.code("write"), g.b.out->device_address(), "injected write");
  g.expect_good();
}

TEST(RefFaults, HangJobUntilSoftReset) {
  Rig g(",hang_job=2");
  g.expect_good();
  g.program_good();
  g.r.start();
  EXPECT_EQ(g.r.get("STATUS", "busy"), 1u);
  EXPECT_EQ(g.r.get("STATUS", "done"), 0u);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(g.d->wait_irq(std::chrono::milliseconds(30)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(25));
  // START while busy: ignored, sticky W1C flag.
  g.r.start();
  EXPECT_EQ(g.r.get("STATUS", "start_ignored"), 1u);
  EXPECT_EQ(g.r.get("STATUS", "busy"), 1u);
  g.r.wr("STATUS", 0);
  EXPECT_EQ(g.r.get("STATUS", "start_ignored"), 1u);
  g.r.wr("STATUS", g.r.put("STATUS", "start_ignored", 1));
  EXPECT_EQ(g.r.get("STATUS", "start_ignored"), 0u);
  // Soft reset aborts: idle, no done, no error, no interrupt, nothing written.
  g.r.soft_reset();
  EXPECT_EQ(g.r.get("STATUS", "busy"), 0u);
  EXPECT_EQ(g.r.get("STATUS", "done"), 0u);
  EXPECT_EQ(g.r.get("STATUS", "error"), 0u);
  EXPECT_EQ(g.r.rd("IRQ_STATUS"), 0u);
  EXPECT_FALSE(g.d->wait_irq(std::chrono::milliseconds(0)));
  EXPECT_EQ(contents(*g.b.out), g.b.out_before);
  g.expect_good();
}

TEST(RefFaults, SoftResetWhileIdleClearsDoneAndError) {
  Rig g("");
  g.program_good();
  g.r.start();
  EXPECT_EQ(g.r.get("STATUS", "done"), 1u);
  g.r.soft_reset();
  EXPECT_EQ(g.r.get("STATUS", "done"), 0u);
  EXPECT_EQ(g.r.get("IRQ_STATUS", "done"), 1u);  // the register block is not reset
  g.r.ack();
  g.r.wr("CHANNELS", 0);
  g.r.start();
  EXPECT_EQ(g.r.get("STATUS", "error"), 1u);
  g.r.soft_reset();
  EXPECT_EQ(g.r.get("STATUS", "error"), 0u);
  EXPECT_EQ(g.r.get("STATUS", "busy"), 0u);
  g.r.ack();
  g.expect_good();
}

TEST(RefIrq, LineFollowsStatusAndEnables) {
  Rig g("");
  g.program_good();
  g.r.start(false, false);
  EXPECT_EQ(g.r.get("IRQ_STATUS", "done"), 1u);
  EXPECT_FALSE(g.d->wait_irq(std::chrono::milliseconds(0)));
  g.r.wr("CTRL", g.r.put("CTRL", "irq_en_error", 1));
  EXPECT_FALSE(g.d->wait_irq(std::chrono::milliseconds(0)));
  g.r.wr("CTRL", g.r.put("CTRL", "irq_en_done", 1));
  EXPECT_TRUE(g.d->wait_irq(std::chrono::milliseconds(0)));
  EXPECT_TRUE(g.d->wait_irq(std::chrono::milliseconds(0)));  // not acknowledged by waiting
  g.r.ack();
  EXPECT_FALSE(g.d->wait_irq(std::chrono::milliseconds(0)));
  // An error raises the line only with irq_en_error.
  g.r.wr("CHANNELS", 0);
  g.r.start(true, false);
  EXPECT_EQ(g.r.get("IRQ_STATUS", "error"), 1u);
  EXPECT_FALSE(g.d->wait_irq(std::chrono::milliseconds(1)));
  g.r.wr("CTRL", g.r.put("CTRL", "irq_en_error", 1));
  EXPECT_TRUE(g.d->wait_irq(std::chrono::milliseconds(1000)));
  g.r.ack();
}

TEST(RefPerf, CountersDescribeTheLastJob) {
  Rig g("");
  g.program_good();
  g.r.start();
  EXPECT_EQ(g.r.rd64("PERF_ELEMS"), g.j.total());
  const std::uint32_t active = g.r.rd("PERF_ACTIVE");
  // At least one beat per `lanes` elements, plus the sizing steps.
  EXPECT_GE(active, g.j.total() / static_cast<std::uint64_t>(g.d->manifest().config.lanes) + 64);
  g.r.ack();
  g.r.wr("CHANNELS", 0);
  g.r.start();
  EXPECT_EQ(g.r.rd64("PERF_ELEMS"), 0u);  // cleared by START
  EXPECT_LT(g.r.rd("PERF_ACTIVE"), active);
}

}  // namespace
