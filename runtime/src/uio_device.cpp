// The uio backend: the accelerator on a Linux board, driven from user space.
//
//   uio:<uioN | /dev/uioN>,manifest=<manifest.json>,dma=<udmabufN>[,root=<dir>][,map=<i>][,irq=0|1]
//
// Registers: the UIO device's memory map <i> (Linux UIO convention: map i is mmapped at file
// offset i * page size; its length is in /sys/class/uio/uioN/maps/map<i>/size, hex "0x...").
// Interrupts (irq=1): write the 32-bit value 1 to the UIO fd to unmask the line, poll() it, then
// read the 32-bit event count (again the UIO convention). With irq=0, or when the "device" is a
// regular file (a test stand-in), the IRQ_STATUS/CTRL registers are polled instead.
// DMA memory: one u-dma-buf region (/dev/udmabufN, /sys/class/u-dma-buf/udmabufN/{phys_addr,size})
// mmapped once and carved into buffers with AddressAllocator.
//
// `root` (default "/") prefixes every /dev and /sys path, so tests can run against a tree of
// regular files.
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <thread>

#include "addr_alloc.hpp"
#include "backends.hpp"
#include "normcore/util/hex.hpp"

namespace normcore::detail {

namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

// "cannot open /dev/uio0: No such file or directory", from the current errno.
[[noreturn]] void fail_errno(const std::string& who, const std::string& what,
                             const fs::path& path) {
  const int err = errno;
  throw DeviceError(who + ": cannot " + what + " " + path.string() + ": " + errno_text(err));
}

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_ = -1;
};

Fd open_file(const std::string& who, const fs::path& path, int flags) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) fail_errno(who, "open", path);
  return Fd(fd);
}

// An owned shared memory mapping.
class Mapping {
 public:
  Mapping() = default;
  Mapping(const std::string& who, const fs::path& path, int fd, std::size_t length, off_t offset)
      : length_(length) {
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
    if (p == MAP_FAILED) fail_errno(who, "mmap " + std::to_string(length) + " bytes of", path);
    addr_ = p;
  }
  Mapping(Mapping&& o) noexcept : addr_(o.addr_), length_(o.length_) { o.addr_ = nullptr; }
  Mapping& operator=(Mapping&& o) noexcept {
    if (this != &o) {
      reset();
      addr_ = o.addr_;
      length_ = o.length_;
      o.addr_ = nullptr;
    }
    return *this;
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { reset(); }
  void reset() {
    if (addr_ != nullptr) ::munmap(addr_, length_);
    addr_ = nullptr;
  }
  [[nodiscard]] void* get() const { return addr_; }
  [[nodiscard]] std::size_t length() const { return length_; }

 private:
  void* addr_ = nullptr;
  std::size_t length_ = 0;
};

struct stat fstat_of(const std::string& who, const Fd& fd, const fs::path& path) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno(who, "stat", path);
  return st;
}

// Whole contents of a (small, sysfs) text file.
std::string read_text(const std::string& who, const fs::path& path) {
  const Fd fd = open_file(who, path, O_RDONLY);
  std::string text;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno(who, "read", path);
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > 4096) break;  // attributes are short; do not slurp a wrong path forever
  }
  return text;
}

// Writes `text` to a sysfs attribute (O_TRUNC so a regular-file stand-in holds just the value;
// sysfs ignores it).
void write_text(const std::string& who, const fs::path& path, const std::string& text) {
  const Fd fd = open_file(who, path, O_WRONLY | O_TRUNC);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_errno(who, "write '" + text + "' to", path);
    done += static_cast<std::size_t>(n);
  }
}

// A number in a sysfs attribute: "0x..." hex or decimal, surrounding whitespace ignored.
std::uint64_t read_number(const std::string& who, const fs::path& path) {
  const std::string text = read_text(who, path);
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  std::string_view t;
  if (first != std::string::npos) t = std::string_view(text).substr(first, last - first + 1);
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    t.remove_prefix(2);
    base = 16;
  }
  std::uint64_t v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size()) {
    std::string shown = text.substr(0, 40);
    while (!shown.empty() && (shown.back() == '\n' || shown.back() == '\r')) shown.pop_back();
    throw DeviceError(who + ": " + path.string() + " holds '" + shown +
                      "', expected a number (decimal or 0x hex)");
  }
  return v;
}

// "uio0" or "/dev/uio0" -> "uio0"; the same for u-dma-buf names.
std::string device_name(const std::string& who, const std::string& what, const std::string& given) {
  std::string n = given;
  if (n.rfind("/dev/", 0) == 0) n = n.substr(5);
  if (n.empty() || n.find('/') != std::string::npos || n == "." || n == "..") {
    throw DeviceError(who + ": " + what + " '" + given + "' is not a device name like " +
                      (what == "UIO device" ? "uio0 or /dev/uio0" : "udmabuf0 or /dev/udmabuf0"));
  }
  return n;
}

// The u-dma-buf region, shared by the device and its buffers (a buffer may outlive the device).
struct DmaRegion {
  std::string who;    // error prefix: "device '<string>'"
  std::string name;   // udmabuf0
  fs::path dev_path;  // <root>/dev/udmabuf0
  fs::path sys_dir;   // <root>/sys/class/u-dma-buf/udmabuf0
  Fd fd;
  Mapping map;
  std::uint64_t phys = 0;
  std::uint64_t size = 0;
  bool coherent = false;  // dma_coherent reads 1: no cache maintenance needed
  AddressAllocator alloc{0, 0};
  DeviceCounters* counters = nullptr;  // the owning device's; cleared when it is destroyed

  [[nodiscard]] std::uint8_t* host(std::uint64_t addr) const {
    return static_cast<std::uint8_t*>(map.get()) + static_cast<std::size_t>(addr - phys);
  }

  // Cache maintenance for [offset, offset + length) of the region, following the manual cache
  // management procedure of the u-dma-buf README ("Manual cache management with the CPU cache
  // still being enabled"): write the range to sync_offset (bytes from the start of the buffer)
  // and sync_size, the DMA direction to sync_direction (1 = DMA_TO_DEVICE, 2 = DMA_FROM_DEVICE),
  // then write 1 to sync_for_device (hand the range to the device: flush) or sync_for_cpu (hand
  // it back to the CPU: invalidate). Skipped when dma_coherent reads 1, where the README says
  // the driver does no cache maintenance anyway.
  void sync(std::uint64_t offset, std::uint64_t length, bool to_device) const {
    if (coherent || length == 0) return;
    write_text(who, sys_dir / "sync_offset", std::to_string(offset));
    write_text(who, sys_dir / "sync_size", std::to_string(length));
    write_text(who, sys_dir / "sync_direction", to_device ? "1" : "2");
    write_text(who, sys_dir / (to_device ? "sync_for_device" : "sync_for_cpu"), "1");
  }
};

class UioDmaBuffer final : public DmaBuffer {
 public:
  UioDmaBuffer(std::shared_ptr<DmaRegion> region, std::uint64_t addr, std::size_t bytes)
      : region_(std::move(region)), addr_(addr), size_(bytes) {}
  ~UioDmaBuffer() override {
    region_->alloc.release(addr_);
    if (region_->counters != nullptr) region_->counters->buffer_bytes -= size_;
  }

  [[nodiscard]] std::uint64_t device_address() const override { return addr_; }
  [[nodiscard]] std::size_t size() const override { return size_; }
  [[nodiscard]] std::span<std::uint8_t> map() override { return {region_->host(addr_), size_}; }
  void sync_to_device(std::size_t offset, std::size_t length) override {
    check(offset, length, "sync_to_device");
    region_->sync(addr_ - region_->phys + offset, length, true);
  }
  void sync_from_device(std::size_t offset, std::size_t length) override {
    check(offset, length, "sync_from_device");
    region_->sync(addr_ - region_->phys + offset, length, false);
  }

 private:
  void check(std::size_t offset, std::size_t length, const char* what) const {
    if (offset > size_ || length > size_ - offset) {
      throw DeviceError(region_->who + ": " + what + "(offset " + std::to_string(offset) +
                        ", length " + std::to_string(length) + ") outside the " +
                        std::to_string(size_) + "-byte buffer at " + hex(addr_));
    }
  }

  std::shared_ptr<DmaRegion> region_;
  std::uint64_t addr_;
  std::size_t size_;
};

class UioDevice final : public Device {
 public:
  UioDevice(const DeviceSpec& spec, Manifest manifest, const std::string& who, const fs::path& root,
            const std::string& uio_name, std::uint64_t map_index, bool want_irq,
            const std::string& dma_name)
      : Device(spec.text, std::move(manifest)), who_(who) {
    open_registers(root, uio_name, map_index, want_irq);
    open_dma(root, dma_name);
    const Manifest& m = this->manifest();
    irq_status_off_ = m.offset("IRQ_STATUS");
    ctrl_off_ = m.offset("CTRL");
    st_done_ = m.field("IRQ_STATUS", "done");
    st_error_ = m.field("IRQ_STATUS", "error");
    en_done_ = m.field("CTRL", "irq_en_done");
    en_error_ = m.field("CTRL", "irq_en_error");
  }

  ~UioDevice() override { dma_->counters = nullptr; }

  std::unique_ptr<DmaBuffer> alloc(std::size_t bytes, std::size_t align) override {
    if (bytes == 0) throw DeviceError(who_ + ": cannot allocate a 0-byte DMA buffer");
    if (align == 0 || (align & (align - 1)) != 0) {
      throw DeviceError(who_ + ": DMA buffer alignment " + std::to_string(align) +
                        " is not a power of two");
    }
    const std::uint64_t bus =
        static_cast<std::uint64_t>(std::max(manifest().config.bus_bytes(), 1));
    // At least a cache line (64 bytes) and the bus width, and whole multiples of it, so two
    // buffers never share a cache line (a sync of one must not flush/invalidate the other).
    const std::uint64_t a = std::max<std::uint64_t>({align, bus, 64});
    const std::uint64_t want = std::uint64_t{bytes};
    const std::uint64_t rounded = (want + a - 1) / a * a;
    const auto addr = rounded < want ? std::nullopt : dma_->alloc.allocate(rounded, a);
    if (!addr) {
      throw DeviceError(who_ + ": out of DMA memory in " + dma_->name + ": requested " +
                        std::to_string(bytes) + " bytes (aligned to " + std::to_string(a) + "), " +
                        std::to_string(dma_->size - dma_->alloc.in_use()) + " of " +
                        std::to_string(dma_->size) + " bytes free");
    }
    try {
      auto buf = std::make_unique<UioDmaBuffer>(dma_, *addr, bytes);
      ++mutable_counters().buffers;
      mutable_counters().buffer_bytes += bytes;
      return buf;
    } catch (...) {
      dma_->alloc.release(*addr);
      throw;
    }
  }

  bool wait_irq(std::chrono::milliseconds timeout) override {
    ++mutable_counters().irq_waits;
    const auto deadline =
        std::chrono::steady_clock::now() + std::max(timeout, std::chrono::milliseconds{0});
    if (irq_line()) return true;
    return has_irq_ ? wait_uio(deadline) : poll_registers(deadline);
  }

  [[nodiscard]] bool has_irq() const override { return has_irq_; }

 protected:
  std::uint32_t do_read32(std::uint32_t offset) override { return regs_[offset / 4]; }
  void do_write32(std::uint32_t offset, std::uint32_t value) override { regs_[offset / 4] = value; }

 private:
  void open_registers(const fs::path& root, const std::string& name, std::uint64_t index,
                      bool want_irq) {
    const fs::path dev = root / "dev" / name;
    const fs::path size_path =
        root / "sys/class/uio" / name / "maps" / ("map" + std::to_string(index)) / "size";
    uio_path_ = dev;
    uio_fd_ = open_file(who_, dev, O_RDWR | O_SYNC);
    const std::uint64_t map_size = read_number(who_, size_path);
    const std::uint32_t window = manifest().window_bytes();
    if (map_size < window) {
      throw DeviceError(who_ + ": UIO map " + std::to_string(index) + " of " + name + " is " +
                        hex(map_size) + " (" + std::to_string(map_size) + ") bytes (" +
                        size_path.string() + ") but the manifest's register window is " +
                        hex(window) + " (" + std::to_string(window) + ") bytes");
    }
    const long page = ::sysconf(_SC_PAGESIZE);
    const std::uint64_t offset = index * static_cast<std::uint64_t>(page > 0 ? page : 4096);
    const struct stat st = fstat_of(who_, uio_fd_, dev);
    const bool regular = S_ISREG(st.st_mode);
    if (regular && static_cast<std::uint64_t>(st.st_size) < offset + window) {
      throw DeviceError(who_ + ": " + dev.string() + " is a " + std::to_string(st.st_size) +
                        "-byte file, too short for map " + std::to_string(index) + " (" +
                        std::to_string(window) + " bytes at offset " + std::to_string(offset) +
                        ")");
    }
    // A regular file (test stand-in) always polls readable and must not get the unmask write.
    has_irq_ = want_irq && !regular;
    regs_map_ = Mapping(who_, dev, uio_fd_.get(), window, static_cast<off_t>(offset));
    regs_ = static_cast<volatile std::uint32_t*>(regs_map_.get());
  }

  void open_dma(const fs::path& root, const std::string& name) {
    auto r = std::make_shared<DmaRegion>();
    r->who = who_;
    r->name = name;
    r->dev_path = root / "dev" / name;
    r->sys_dir = root / "sys/class/u-dma-buf" / name;
    // Drivers before the rename to u-dma-buf used the class name "udmabuf".
    std::error_code ec;
    if (!fs::exists(r->sys_dir, ec) && fs::exists(root / "sys/class/udmabuf" / name, ec)) {
      r->sys_dir = root / "sys/class/udmabuf" / name;
    }
    r->fd = open_file(who_, r->dev_path, O_RDWR | O_SYNC);
    r->size = read_number(who_, r->sys_dir / "size");
    r->phys = read_number(who_, r->sys_dir / "phys_addr");
    if (r->size == 0) {
      throw DeviceError(who_ + ": " + (r->sys_dir / "size").string() + " says the buffer is empty");
    }
    if (r->size > static_cast<std::uint64_t>(SIZE_MAX) || r->phys + r->size < r->phys) {
      throw DeviceError(who_ + ": u-dma-buf " + name + " at " + hex(r->phys) + " size " +
                        std::to_string(r->size) + " does not fit the address space");
    }
    const fs::path coherent = r->sys_dir / "dma_coherent";
    if (fs::exists(coherent, ec)) r->coherent = read_number(who_, coherent) == 1;
    const struct stat st = fstat_of(who_, r->fd, r->dev_path);
    if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) < r->size) {
      throw DeviceError(who_ + ": " + r->dev_path.string() + " is a " + std::to_string(st.st_size) +
                        "-byte file, smaller than the " + std::to_string(r->size) + " bytes in " +
                        (r->sys_dir / "size").string());
    }
    r->map = Mapping(who_, r->dev_path, r->fd.get(), static_cast<std::size_t>(r->size), 0);
    r->alloc = AddressAllocator(r->phys, r->size);
    r->counters = &mutable_counters();
    dma_ = std::move(r);
  }

  // The interrupt output as the block computes it: IRQ_STATUS bits gated by the CTRL enables.
  bool irq_line() {
    const std::uint32_t st = regs_[irq_status_off_ / 4];
    const std::uint32_t ctrl = regs_[ctrl_off_ / 4];
    return (st_done_.get(st) != 0 && en_done_.get(ctrl) != 0) ||
           (st_error_.get(st) != 0 && en_error_.get(ctrl) != 0);
  }

  bool poll_registers(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      if (irq_line()) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // UIO: unmask (write 1), poll, read the event count. An event counted earlier but not waited
  // for (the line was seen high in the registers) leaves the fd readable; such a stale event is
  // consumed and the wait goes on until the line is really high.
  bool wait_uio(std::chrono::steady_clock::time_point deadline) {
    const fs::path& dev = uio_path_;
    for (;;) {
      const std::uint32_t one = 1;
      ssize_t n;
      do {
        n = ::write(uio_fd_.get(), &one, sizeof one);
      } while (n < 0 && errno == EINTR);
      if (n != static_cast<ssize_t>(sizeof one)) {
        const int err = n < 0 ? errno : EIO;
        throw DeviceError(who_ + ": cannot unmask the interrupt of " + dev.string() + ": " +
                          errno_text(err) + " (the UIO driver has no irqcontrol; use irq=0)");
      }
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{uio_fd_.get(), POLLIN, 0};
      const int r =
          ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left.count(), 0, 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail_errno(who_, "poll", dev);
      if (r == 0) return irq_line();
      if ((p.revents & POLLIN) == 0) {
        throw DeviceError(who_ + ": poll on " + dev.string() + " reported an error (revents " +
                          hex(static_cast<std::uint64_t>(p.revents)) + ")");
      }
      std::uint32_t count = 0;
      do {
        n = ::read(uio_fd_.get(), &count, sizeof count);
      } while (n < 0 && errno == EINTR);
      if (n != static_cast<ssize_t>(sizeof count)) {
        const int err = n < 0 ? errno : EIO;
        throw DeviceError(who_ + ": cannot read the interrupt count from " + dev.string() + ": " +
                          errno_text(err));
      }
      if (irq_line()) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
    }
  }

  std::string who_;
  fs::path uio_path_;
  Fd uio_fd_;
  Mapping regs_map_;
  volatile std::uint32_t* regs_ = nullptr;
  bool has_irq_ = false;
  std::shared_ptr<DmaRegion> dma_;
  std::uint32_t irq_status_off_ = 0, ctrl_off_ = 0;
  FieldDesc st_done_, st_error_, en_done_, en_error_;
};

}  // namespace

std::unique_ptr<Device> open_uio_device(const DeviceSpec& spec) {
  const std::string who = "device '" + spec.text + "'";
  // Read every option first, so each is marked used and checked even on the error paths.
  const std::string manifest_path = spec.get("manifest", "");
  const std::string dma = spec.get("dma", "");
  const fs::path root = spec.get("root", "/");
  const std::uint64_t map_index = spec.get_u64("map", 0);
  const std::uint64_t irq = spec.get_u64("irq", 1);
  if (manifest_path.empty()) {
    throw DeviceError(who +
                      ": backend 'uio' needs manifest=<manifest.json> (the UIO device does "
                      "not say which accelerator configuration it is)");
  }
  if (dma.empty()) {
    throw DeviceError(who +
                      ": backend 'uio' needs dma=<udmabufN> (the u-dma-buf device that "
                      "provides the DMA memory)");
  }
  if (irq > 1)
    throw DeviceError(who + ": option irq=" + spec.options.at("irq") + " must be 0 or 1");
  if (map_index > 255) {
    throw DeviceError(who + ": option map=" + spec.options.at("map") + " is not a UIO map index");
  }
  const std::string uio_name = device_name(who, "UIO device", spec.target);
  const std::string dma_name = device_name(who, "u-dma-buf device", dma);
  Manifest m;
  try {
    m = load_manifest(manifest_path);
  } catch (const DeviceError&) {
    throw;
  } catch (const Error& e) {
    throw DeviceError(who + ": " + e.what());
  }
  auto dev = std::make_unique<UioDevice>(spec, std::move(m), who, root, uio_name, map_index,
                                         irq == 1, dma_name);
  return dev;
}

}  // namespace normcore::detail
