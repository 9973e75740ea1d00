// The uio backend against a stand-in tree of regular files (root=<tmp>): dev/uio0 is the register
// window, dev/udmabuf0 the DMA memory, sys/class/... the attributes the drivers would export.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "normcore/device.hpp"
#include "normcore/manifest.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using normcore::DeviceError;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint32_t kId = 0x4E43424Eu;
constexpr std::uint64_t kPhys = 0x38000000u;
constexpr std::uint64_t kDmaSize = 1u << 20;

std::string manifest_path() {
  return normcore::test::devices_dir() + "/normcore/rtl/manifest.json";
}

const normcore::Manifest& manifest() {
  static const normcore::Manifest m = normcore::load_manifest(manifest_path());
  return m;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const DeviceError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a DeviceError) ") + e.what();
  }
  return "(no error)";
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::uint32_t file_u32(const fs::path& p, std::size_t offset) {
  const std::string s = read_file(p);
  std::uint32_t v = 0;
  if (offset + 4 > s.size()) throw std::runtime_error("short file " + p.string());
  std::memcpy(&v, s.data() + offset, 4);
  return v;
}

void put_u32(const fs::path& p, std::size_t offset, std::uint32_t v) {
  std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(reinterpret_cast<const char*>(&v), 4);
  if (!f) throw std::runtime_error("cannot patch " + p.string());
}

std::size_t page_size() {
  return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// The stand-in tree, removed at the end of the test.
class UioTree {
 public:
  UioTree() {
    std::string tmpl = (fs::temp_directory_path() / "normcore_uio_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
    std::string regs(4096, '\0');
    std::memcpy(regs.data(), &kId, 4);
    write_file(uio(), regs);
    write_file(uio_sys() / "maps/map0/size", "0x1000\n");
    write_file(uio_sys() / "name", "normcore\n");
    write_file(dma(), std::string(kDmaSize, '\0'));
    write_file(dma_sys() / "phys_addr", "0x38000000\n");
    write_file(dma_sys() / "size", "1048576\n");
    write_file(dma_sys() / "sync_mode", "1\n");
    for (const char* a :
         {"sync_offset", "sync_size", "sync_direction", "sync_for_cpu", "sync_for_device"}) {
      write_file(dma_sys() / a, "0\n");
    }
  }
  ~UioTree() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  UioTree(const UioTree&) = delete;
  UioTree& operator=(const UioTree&) = delete;

  [[nodiscard]] const fs::path& root() const { return root_; }
  [[nodiscard]] fs::path uio() const { return root_ / "dev/uio0"; }
  [[nodiscard]] fs::path uio_sys() const { return root_ / "sys/class/uio/uio0"; }
  [[nodiscard]] fs::path dma() const { return root_ / "dev/udmabuf0"; }
  [[nodiscard]] fs::path dma_sys() const { return root_ / "sys/class/u-dma-buf/udmabuf0"; }
  [[nodiscard]] std::string spec(const std::string& extra = "") const {
    return "uio:uio0,manifest=" + manifest_path() + ",dma=udmabuf0,root=" + root_.string() + extra;
  }
  [[nodiscard]] std::string attr(const char* name) const { return read_file(dma_sys() / name); }

 private:
  fs::path root_;
};

// ---------------------------------------------------------------------------------------------
// Registers

TEST(UioRegisters, ReadsAndWritesTheWindow) {
  UioTree t;
  auto dev = normcore::open_device(t.spec());
  EXPECT_EQ(dev->name(), t.spec());
  EXPECT_EQ(dev->manifest().top, "normcore_top");
  EXPECT_EQ(dev->read32(0), kId);
  EXPECT_EQ(dev->read32(0), manifest().reg("ID").reset);
  const std::uint32_t chan = manifest().offset("CHANNELS");
  dev->write32(chan, 0x1234u);
  EXPECT_EQ(file_u32(t.uio(), chan), 0x1234u);
  EXPECT_EQ(dev->read32(chan), 0x1234u);
  dev->write32(0xFFC, 0xDEADBEEFu);  // last word of the window
  EXPECT_EQ(file_u32(t.uio(), 0xFFC), 0xDEADBEEFu);
  put_u32(t.uio(), 0x80, 0xA5A5A5A5u);  // a change behind the device's back is seen
  EXPECT_EQ(dev->read32(0x80), 0xA5A5A5A5u);
  EXPECT_EQ(dev->counters().reads, 4u);
  EXPECT_EQ(dev->counters().writes, 2u);
}

TEST(UioRegisters, AcceptsADevPathAndIrqOff) {
  UioTree t;
  const std::string s = "uio:/dev/uio0,manifest=" + manifest_path() +
                        ",dma=/dev/udmabuf0,irq=0,map=0,root=" + t.root().string();
  auto dev = normcore::open_device(s);
  EXPECT_EQ(dev->read32(0), kId);
  EXPECT_FALSE(dev->has_irq());
}

TEST(UioRegisters, MapIndexSelectsThePageOffset) {
  UioTree t;
  // Map 1 lives at file offset 1 * page size (the UIO mmap convention).
  std::string regs(page_size() + 4096, '\0');
  const std::uint32_t other = 0x11111111u;
  std::memcpy(regs.data(), &other, 4);
  std::memcpy(regs.data() + page_size(), &kId, 4);
  write_file(t.uio(), regs);
  write_file(t.uio_sys() / "maps/map1/size", "0x00001000\n");
  auto dev = normcore::open_device(t.spec(",map=1"));
  EXPECT_EQ(dev->read32(0), kId);
  dev->write32(8, 7);
  EXPECT_EQ(file_u32(t.uio(), page_size() + 8), 7u);
  EXPECT_EQ(file_u32(t.uio(), 8), 0u);
}

TEST(UioRegisters, BadOffsetsThrowAndDoNotTouchTheFile) {
  UioTree t;
  auto dev = normcore::open_device(t.spec());
  const std::string before = read_file(t.uio());
  EXPECT_NE(error_of([&] { dev->write32(0x1000, 1); }).find("0x1000"), std::string::npos);
  EXPECT_NE(error_of([&] { dev->write32(0x42, 1); }).find("aligned"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)dev->read32(0x1000); }).find("window"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)dev->read32(0xFFFFFFFCu); }), "(no error)");
  EXPECT_EQ(read_file(t.uio()), before);
  EXPECT_EQ(dev->counters().writes, 0u);
  EXPECT_EQ(dev->counters().reads, 0u);
}

// ---------------------------------------------------------------------------------------------
// Interrupt (the stand-in is a regular file: register polling)

struct IrqBits {
  std::uint32_t status_off, ctrl_off;
  std::uint32_t done, error, en_done, en_error;
};

IrqBits irq_bits() {
  const auto& m = manifest();
  return {m.offset("IRQ_STATUS"),
          m.offset("CTRL"),
          m.field("IRQ_STATUS", "done").mask(),
          m.field("IRQ_STATUS", "error").mask(),
          m.field("CTRL", "irq_en_done").mask(),
          m.field("CTRL", "irq_en_error").mask()};
}

TEST(UioIrq, PollsTheRegistersOnAStandIn) {
  UioTree t;
  auto dev = normcore::open_device(t.spec());  // irq=1 by default, but a regular file
  EXPECT_FALSE(dev->has_irq());
  const IrqBits b = irq_bits();

  auto t0 = Clock::now();
  EXPECT_FALSE(dev->wait_irq(milliseconds(20)));
  auto dt = Clock::now() - t0;
  EXPECT_GE(dt, milliseconds(20));
  EXPECT_LT(dt, milliseconds(300));

  // Status without the enable: the line stays low.
  put_u32(t.uio(), b.status_off, b.done);
  EXPECT_FALSE(dev->wait_irq(milliseconds(5)));
  // Enable of the other source only: still low.
  put_u32(t.uio(), b.ctrl_off, b.en_error);
  EXPECT_FALSE(dev->wait_irq(milliseconds(5)));

  put_u32(t.uio(), b.ctrl_off, b.en_done);
  t0 = Clock::now();
  EXPECT_TRUE(dev->wait_irq(milliseconds(1000)));
  EXPECT_LT(Clock::now() - t0, milliseconds(100));
  // Not acknowledged by the wait.
  EXPECT_EQ(file_u32(t.uio(), b.status_off), b.done);

  put_u32(t.uio(), b.status_off, b.error);
  put_u32(t.uio(), b.ctrl_off, b.en_error);
  EXPECT_TRUE(dev->wait_irq(milliseconds(0)));
  EXPECT_EQ(dev->counters().irq_waits, 5u);
}

// Deterministic under any load: the line rises only after the wait has been entered, the wait
// must not return before it rose (`raised` is set before the status write) and must return true
// (the line, not the time-out: a time-out returns false) well before a long time-out.
TEST(UioIrq, WakesWhenTheLineRisesDuringTheWait) {
  UioTree t;
  auto dev = normcore::open_device(t.spec(",irq=0"));
  const IrqBits b = irq_bits();
  put_u32(t.uio(), b.ctrl_off, b.en_done | b.en_error);
  std::atomic<bool> waiting{false}, raised{false};
  std::thread raiser([&] {
    while (!waiting.load()) std::this_thread::yield();
    std::this_thread::sleep_for(milliseconds(20));  // the waiter polls the clear line meanwhile
    raised.store(true);
    put_u32(t.uio(), b.status_off, b.error);
  });
  constexpr milliseconds kTimeout{60000};
  const auto t0 = Clock::now();
  waiting.store(true);
  const bool fired = dev->wait_irq(kTimeout);
  const bool after_the_rise = raised.load();
  const auto dt = Clock::now() - t0;
  raiser.join();
  EXPECT_TRUE(after_the_rise) << "wait_irq returned before the line rose";
  EXPECT_TRUE(fired);
  EXPECT_LT(dt, kTimeout / 2);
}

TEST(UioIrq, RejectsABadIrqOption) {
  UioTree t;
  EXPECT_NE(error_of([&] { normcore::open_device(t.spec(",irq=2")); }).find("irq=2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { normcore::open_device(t.spec(",irq=yes")); }).find("irq=yes"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// DMA buffers

TEST(UioDma, BuffersAreAlignedDisjointAndInsideTheRegion) {
  UioTree t;
  auto dev = normcore::open_device(t.spec());
  std::vector<std::unique_ptr<normcore::DmaBuffer>> bufs;
  const std::vector<std::pair<std::size_t, std::size_t>> asks = {{100, 64}, {1, 1},    {4096, 4096},
                                                                 {3000, 8}, {64, 256}, {12345, 64}};
  std::uint64_t bytes = 0;
  for (const auto& [n, a] : asks) {
    bufs.push_back(dev->alloc(n, a));
    bytes += n;
    auto& b = *bufs.back();
    EXPECT_EQ(b.size(), n);
    EXPECT_EQ(b.map().size(), n);
    EXPECT_GE(b.device_address(), kPhys);
    EXPECT_LE(b.device_address() + n, kPhys + kDmaSize);
    EXPECT_EQ(b.device_address() % std::max<std::size_t>({a, 64, 8}), 0u) << n << " " << a;
  }
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    for (std::size_t j = i + 1; j < bufs.size(); ++j) {
      const auto ai = bufs[i]->device_address(), aj = bufs[j]->device_address();
      EXPECT_TRUE(ai + bufs[i]->size() <= aj || aj + bufs[j]->size() <= ai) << i << " " << j;
    }
  }
  EXPECT_EQ(dev->counters().buffers, asks.size());
  EXPECT_EQ(dev->counters().buffer_bytes, bytes);
  bufs.clear();
  EXPECT_EQ(dev->counters().buffers, asks.size());
  EXPECT_EQ(dev->counters().buffer_bytes, 0u);
}

TEST(UioDma, MappedBytesLandInTheUdmabufFile) {
  UioTree t;
  auto dev = normcore::open_device(t.spec());
  auto pad = dev->alloc(1000);
  auto buf = dev->alloc(256);
  auto m = buf->map();
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<std::uint8_t>(i ^ 0x5A);
  buf->sync_to_device();
  const std::string file = read_file(t.dma());
  const std::size_t off = static_cast<std::size_t>(buf->device_address() - kPhys);
  ASSERT_LE(off + 256, file.size());
  for (std::size_t i = 0; i < 256; ++i) {
    ASSERT_EQ(static_cast<std::uint8_t>(file[off + i]), static_cast<std::uint8_t>(i ^ 0x5A)) << i;
  }
  // And the other way: the "device" writes the file, the host reads map().
  {
    std::fstream f(t.dma(), std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(off + 10));
    f.write("hello", 5);
  }
  buf->sync_from_device();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data()) + 10, 5), "hello");
}

TEST(UioDma, FreedSpaceIsReusedAndExhaustionIsAClearError) {
  UioTree t;
  auto dev = normcore::open_device(t.spec());
  auto a = dev->alloc(4096);
  const auto addr = a->device_address();
  auto b = dev->alloc(4096);
  a.reset();
  auto c = dev->alloc(4096);
  EXPECT_EQ(c->device_address(), addr);

  const std::string e = error_of([&] { (void)dev->alloc(2u << 20); });
  EXPECT_NE(e.find("out of DMA memory"), std::string::npos) << e;
  EXPECT_NE(e.find("2097152"), std::string::npos) << e;                        // requested
  EXPECT_NE(e.find(std::to_string(kDmaSize - 8192)), std::string::npos) << e;  // free

  auto rest = dev->alloc(kDmaSize - 8192);  // exactly the rest
  EXPECT_NE(error_of([&] { (void)dev->alloc(1); }).find("out of DMA memory"), std::string::npos);
  rest.reset();
  EXPECT_NO_THROW((void)dev->alloc(1));

  EXPECT_NE(error_of([&] { (void)dev->alloc(0); }), "(no error)");
  EXPECT_NE(error_of([&] { (void)dev->alloc(64, 3); }).find("power of two"), std::string::npos);
}

TEST(UioDma, BufferMayOutliveTheDevice) {
  UioTree t;
  auto dev = normcore::open_device(t.spec());
  auto buf = dev->alloc(64);
  dev.reset();
  buf->map()[0] = 42;
  EXPECT_EQ(buf->map()[0], 42);
  buf.reset();
}

TEST(UioDma, SyncDrivesTheSysfsAttributesWhenNotCoherent) {
  UioTree t;
  write_file(t.dma_sys() / "dma_coherent", "0\n");
  auto dev = normcore::open_device(t.spec());
  auto pad = dev->alloc(64);
  auto buf = dev->alloc(512);
  const std::uint64_t off = buf->device_address() - kPhys;
  ASSERT_GT(off, 0u);

  buf->sync_to_device(16, 100);
  EXPECT_EQ(t.attr("sync_offset"), std::to_string(off + 16));
  EXPECT_EQ(t.attr("sync_size"), "100");
  EXPECT_EQ(t.attr("sync_direction"), "1");
  EXPECT_EQ(t.attr("sync_for_device"), "1");
  EXPECT_EQ(t.attr("sync_for_cpu"), "0\n");  // untouched

  buf->sync_from_device();
  EXPECT_EQ(t.attr("sync_offset"), std::to_string(off));
  EXPECT_EQ(t.attr("sync_size"), "512");
  EXPECT_EQ(t.attr("sync_direction"), "2");
  EXPECT_EQ(t.attr("sync_for_cpu"), "1");

  EXPECT_NE(error_of([&] { buf->sync_to_device(500, 13); }).find("outside"), std::string::npos);
  EXPECT_NE(error_of([&] { buf->sync_from_device(513, 0); }).find("outside"), std::string::npos);

  // A missing attribute is an error naming it.
  fs::remove(t.dma_sys() / "sync_for_device");
  const std::string e = error_of([&] { buf->sync_to_device(); });
  EXPECT_NE(e.find((t.dma_sys() / "sync_for_device").string()), std::string::npos) << e;
}

TEST(UioDma, NoSyncWritesWhenCoherent) {
  UioTree t;
  write_file(t.dma_sys() / "dma_coherent", "1\n");
  auto dev = normcore::open_device(t.spec());
  auto buf = dev->alloc(512);
  buf->sync_to_device();
  buf->sync_from_device(8, 8);
  for (const char* a :
       {"sync_offset", "sync_size", "sync_direction", "sync_for_cpu", "sync_for_device"}) {
    EXPECT_EQ(t.attr(a), "0\n") << a;
  }
}

TEST(UioDma, DecimalPhysAddrAndLegacyClassName) {
  UioTree t;
  fs::rename(t.root() / "sys/class/u-dma-buf", t.root() / "sys/class/udmabuf");
  write_file(t.root() / "sys/class/udmabuf/udmabuf0/phys_addr", "939524096\n");  // 0x38000000
  auto dev = normcore::open_device(t.spec());
  EXPECT_EQ(dev->alloc(64, 4096)->device_address(), kPhys);
}

// ---------------------------------------------------------------------------------------------
// Open errors

TEST(UioErrors, MissingOptions) {
  UioTree t;
  std::string e =
      error_of([&] { normcore::open_device("uio:uio0,dma=udmabuf0,root=" + t.root().string()); });
  EXPECT_NE(e.find("manifest="), std::string::npos) << e;
  e = error_of([&] {
    normcore::open_device("uio:uio0,manifest=" + manifest_path() + ",root=" + t.root().string());
  });
  EXPECT_NE(e.find("dma="), std::string::npos) << e;
  e = error_of([&] { normcore::open_device(t.spec(",colour=blue")); });
  EXPECT_NE(e.find("unknown option 'colour'"), std::string::npos) << e;
  e = error_of([&] {
    normcore::open_device("uio:uio0,manifest=" + (t.root() / "nope.json").string() +
                          ",dma=udmabuf0,root=" + t.root().string());
  });
  EXPECT_NE(e.find("nope.json"), std::string::npos) << e;
  e = error_of([&] {
    normcore::open_device("uio:uio0,manifest=" + manifest_path() +
                          ",dma=../x,root=" + t.root().string());
  });
  EXPECT_NE(e.find("'../x'"), std::string::npos) << e;
}

TEST(UioErrors, MissingFilesNameThePath) {
  {
    UioTree t;
    fs::remove(t.uio());
    const std::string e = error_of([&] { normcore::open_device(t.spec()); });
    EXPECT_NE(e.find(t.uio().string()), std::string::npos) << e;
    EXPECT_NE(e.find("No such file"), std::string::npos) << e;
  }
  {
    UioTree t;
    fs::remove(t.uio_sys() / "maps/map0/size");
    const std::string e = error_of([&] { normcore::open_device(t.spec()); });
    EXPECT_NE(e.find((t.uio_sys() / "maps/map0/size").string()), std::string::npos) << e;
  }
  {
    UioTree t;
    const std::string e = error_of([&] { normcore::open_device(t.spec(",map=2")); });
    EXPECT_NE(e.find("map2/size"), std::string::npos) << e;
  }
  {
    UioTree t;
    fs::remove(t.dma());
    const std::string e = error_of([&] { normcore::open_device(t.spec()); });
    EXPECT_NE(e.find(t.dma().string()), std::string::npos) << e;
  }
  {
    UioTree t;
    fs::remove(t.dma_sys() / "phys_addr");
    const std::string e = error_of([&] { normcore::open_device(t.spec()); });
    EXPECT_NE(e.find((t.dma_sys() / "phys_addr").string()), std::string::npos) << e;
  }
  {
    UioTree t;
    write_file(t.dma_sys() / "size", "lots\n");
    const std::string e = error_of([&] { normcore::open_device(t.spec()); });
    EXPECT_NE(e.find("'lots'"), std::string::npos) << e;
    EXPECT_NE(e.find((t.dma_sys() / "size").string()), std::string::npos) << e;
  }
}

TEST(UioErrors, MapSmallerThanTheRegisterWindow) {
  UioTree t;
  write_file(t.uio_sys() / "maps/map0/size", "0x800\n");
  const std::string e = error_of([&] { normcore::open_device(t.spec()); });
  EXPECT_NE(e.find("0x800"), std::string::npos) << e;
  EXPECT_NE(e.find("4096"), std::string::npos) << e;
}

TEST(UioErrors, StandInFilesTooShort) {
  {
    UioTree t;
    write_file(t.uio(), std::string(100, '\0'));
    const std::string e = error_of([&] { normcore::open_device(t.spec()); });
    EXPECT_NE(e.find("too short"), std::string::npos) << e;
  }
  {
    UioTree t;
    write_file(t.dma(), std::string(1000, '\0'));
    const std::string e = error_of([&] { normcore::open_device(t.spec()); });
    EXPECT_NE(e.find(t.dma().string()), std::string::npos) << e;
  }
}

TEST(UioErrors, BadDeviceNames) {
  UioTree t;
  const std::string e = error_of([&] {
    normcore::open_device("uio:/tmp/uio0,manifest=" + manifest_path() +
                          ",dma=udmabuf0,root=" + t.root().string());
  });
  EXPECT_NE(e.find("/tmp/uio0"), std::string::npos) << e;
}

}  // namespace
